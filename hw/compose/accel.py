# amaranth: UnusedElaboratable=no
"""``accel``: one accelerator from the parts, attached as a co-processor.

The host writes the run's registers over AXI4-Lite (:mod:`sparseforge.sw.regmap`) and
its memory (:mod:`sparseforge.sw.accel_image`): A as CSR, B in panels, the tile list
(:mod:`sparseforge.sw.accel_plan`). On ``start`` the accelerator computes ``Y = A B``
(SpMM), or ``y = A b`` (SpMV, on Tensaurus's own SpMV mapping, the ``MV`` kernel),
or, on a build of ``order`` 3, ``Y[i] = sum_{j,k} T[i,j,k] B[j] * C[k]`` (SpMTTKRP,
Tensaurus §5.2's MTTKRP mapping) of a tensor stored as COO, through one AXI4 master:

- the **sequencer** (:class:`~sparseforge.hw.accel_control.AccelControl`) walks the tile
  list band by band and pass by pass over B's column panels;
- **MINT's tile converter** (:class:`~sparseforge.hw.convert_ciss.CsrTileToCiss`) reads
  A's CSR arrays as stored (row pointers, column ids, values: each lane's ``{col,
  value}`` joined from the two arrays by a :class:`~sparseforge.hw.stream_units.Zip`)
  and converts each window to CISS in line;
- a **Tailor** holds the band's CISS stream across passes
  (:class:`~sparseforge.hw.compose.held_tile.HeldTile`): the first pass fills it from the
  converter, later passes read it, and a band longer than it overbooks it, its bumped
  part converted again every pass and counted (Tailors §3);
- **Tensaurus** (:class:`~sparseforge.hw.compose.tensaurus.Tensaurus`) reads the band's
  entries from the Tailor as from memory, B's rows through the master (the MLU), and
  its MSU writes each band's panel of Y back through the master.

**SpMTTKRP** (``order`` 3). The tensor is stored as COO sorted by ``(i, j, k)``: four
arrays (i ids at ``a_rowptr``, j ids at ``a_colid``, k ids at ``a_kid``, values), the
form FROSTT's files and most tensor libraries keep, so the host copies it as it is.
CSF would hand the converter its slice pointers directly, but its fiber level would be a
second pointer array each lane walks, and MINT converts COO with the units it already
has: the converter's tensor mode (:class:`~sparseforge.hw.convert_ciss.CooPointers`, a
cluster counter over the i ids) makes each band's slice pointers, the pre-pass counts a
window's j ids as it counts a CSR's column ids, and each lane reads ``{j, k, value}``
through a :class:`~sparseforge.hw.stream_units.Zip` of three arrays. Tiles are SpMM's:
bands of slices (the MSU's rows), sized by the tiling policy in CISS entries and held
in the Tailor across the passes over the rank's panels; windows go over j (B's rows,
loaded per tile as SpMM's B), within a slice contiguous in ``(i, j, k)`` order, while
C's ``K`` rows load whole with every tile (the host refuses a C the scratchpads do not
hold: a window over k would cut every fiber, its elements no longer one run a lane
reads).

**SpGEMM** (``engine`` ``gustavson``, the ``SPGEMM`` kernel): C = A·B of two sparse
matrices on Gustavson's PEs (:class:`~sparseforge.hw.compose.spgemm.Spgemm`), A and B
read as CSR where the user stored them, B's column tiles listed in the tile list
(:mod:`sparseforge.sw.accel_spgemm`), C written back as the engine's words and its rows'
lengths.

**Pruned GEMM** (``engine`` ``eureka``, the ``PRUNED_GEMM`` kernel): Y = W X of pruned
weights and dense activations on an Eureka sub-array row
(:class:`~sparseforge.hw.compose.pruned_gemm.PrunedGemm`), W read as the SUDS block
records the host's optimal scheduler made and their places, X as slabs, Y written as
tiles (:mod:`sparseforge.sw.accel_eureka`).

The engine is a **build parameter**, not a second engine beside the first in one build
chosen by the kernel register: the two share everything but the engine (the register
file and its one map, the master, the run's status and counters, the host's driver and
benches), so a build parameter keeps one composite and one host path; while both in one
build would need Tensaurus's in-order ports (three, and two a PE row) and Gustavson's
(four, and three a PE) on one master of :data:`~sparseforge.hw.axi_master.PORTS`, so
at most two PE rows and one Gustavson PE, and the area of both for a run that uses one.
A Gustavson build computes SpGEMM whatever the kernel register says (the host writes
``SPGEMM``).

The register file's ``status`` says busy, done and error (an AXI error response, or a
converter count unlike the tile list's); ``cycles``, ``bytes_read``, ``bytes_written``
and ``refetched`` count the run.

Memory ports on the master (each of its own word width, :mod:`~sparseforge.hw.axi_master`):
in order, the tile list, the row pointers (a tensor's i ids), the pre-pass's column ids
(j ids), and each lane's column ids and values (a tensor's j ids, k ids and values);
tagged, the MLU's reads; writes, the MSU's. On a Gustavson build: in order, the tile
list, A's three arrays and B's three arrays a PE; writes, C's words and its row lengths
(with HYTE's buffer: A's three arrays, the positions unit's three, B's column ids and
values twice (the tile fetcher's, the row server's) and the kept entries; writes, C's
words, its row lengths, the kept entries and the tile log). On an Eureka build: in
order, the blocks' places, their records and X's slabs; writes, Y's tiles.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ...core.errors import ParameterError
from ...core.params import Param, check_params, choice
from ...core.registry import block
from ...sw import wire
from ...sw.hyte_schedule import A_CURSORS
from ..accel_control import AccelControl, ConverterFeed, RunStatus
from ..axi import AxiLiteSignature, pins
from ..axi_master import PORTS, AxiMaster
from ..convert_ciss import CsrTileToCiss
from ..eureka_array import COLS
from ..eureka_mac import COMPACTION
from ..interfaces import ciss_entry_layout
from ..regfile import RegisterFile
from ..stream_units import Offset, Zip
from ..tailor_feed import report_layout
from .held_tile import HeldTile
from .pruned_gemm import PrunedGemm
from .spgemm import Spgemm
from .tensaurus import Tensaurus

MOST_PES = (PORTS - 3) // 2
"""The most PE rows: the AXI master's in-order read ports are the tile list's, the row
pointers', the pre-pass's column ids' and a column id and a value port a PE row."""

MOST_TENSOR_PES = (PORTS - 3) // 3
"""The most PE rows of a build of ``order`` 3: a j id, a k id and a value port a PE row."""

MOST_GUSTAVSON_PES = (PORTS - 4) // 3
"""The most PEs of a Gustavson build: in-order read ports for the tile list and A's three
arrays, and B's three arrays a PE (:class:`~.spgemm.Spgemm`)."""

ENGINES = ("tensaurus", "gustavson", "eureka")
TILE_COLS = Param("tile_cols", 64, 8, 4096, "Gustavson: C's columns a column tile holds",
                  pow2=True)
BUFFER = Param("buffer", 0, 0, 1 << 15, "Gustavson: HYTE's accessor words holding B's tiles "
               "(0: B's rows read from memory; else one PE)", pow2=True)
CURSORS = Param("cursors", A_CURSORS, 1, 1 << 12, "Gustavson with HYTE's buffer: rows of "
                 "A's tile whose segment positions are kept on chip")
LEAST_BUFFER = 4
"""The fewest words HYTE's buffer holds (a row's metadata and its first elements)."""


@block("accel")
class Accel(wiring.Component):
    """The accelerator: registers, sequencer, converter, Tailor, Tensaurus, one AXI master;
    or, on a Gustavson build, the Gustavson engine with its CSR readers in their place, or
    on an Eureka build, the Eureka sub-array row with its walkers.

    Parameters
    ----------
    pes, cols, vlen, tlen : Tensaurus's array (``pes`` rows, CISS lanes) and each PE's
        lanes and chunks: a pass computes ``R = tlen * cols * vlen`` of B's columns.
    spm_rows, out_rows : B's rows a scratchpad holds; a band's rows at most (the MSU's).
    depth, fifo, tile : the Tailor's CISS entries, its FIFO region, a band's longest
        stream.
    dw, iw, acc_width : bits of a value, an index, an accumulator.
    tags : reads in flight of each tagged unit (the TLU's, the MLU's).
    data : bits of the AXI data bus.
    order : 2 for matrices (SpMM, SpMV; A as CSR), 3 for 3-D tensors (SpMTTKRP; T as
        COO, at most :data:`MOST_TENSOR_PES` PE rows).
    engine : ``tensaurus`` (the parameters above) or ``gustavson`` (SpGEMM: ``pes`` PEs,
        at most :data:`MOST_GUSTAVSON_PES`, with ``tile_cols``, ``lanes``, ``inflight``,
        ``dw``, ``iw``, ``acc_width``; the Tensaurus parameters unused).
    tile_cols, lanes, inflight : the Gustavson engine's column tile, its words of C, and
        the reads its PEs and CSR readers make ahead.
    buffer : the Gustavson engine's HYTE buffer, B's tiles in an accessor of that many
        words (a power of two; 0: none, B's rows read from memory), with one PE.
    cursors : with the buffer, the rows of A's tile whose segment positions are kept on
        chip (:class:`~.spgemm.Cursors`): a larger tile of A reads its rows whole.
    compaction : the Eureka engine's P (``engine`` ``eureka``: ``cols`` 4x4 sub-arrays
        side by side, at most four, with ``dw``, ``iw``, ``acc_width``).

    Members
    -------
    s_axil : In(pins(AxiLiteSignature(8, 32))), the host's registers.
    m_axi : Out(pins(AxiSignature(32, data, ...))), memory.

    Clock: below 100 MHz on the ECP5-85F (the synthesis report). Its paths are the
    handshakes between units and within the larger ones, placed apart: the run's kernel
    register into a PE's phases or a PE's output into a scratchpad's queue, the
    converter's window compares (a column id against the tile's bounds) into its row
    count, its entries through the Tailor's feed (which waits on the entry after) back
    into its output register; the units' reads into the AXI master's round robin over
    its read ports. R's beat is registered for each read port apart, after the choice by
    its ID (:class:`~sparseforge.hw.axi_master.TaggedMux`), so no one register reaches
    every port's reorder buffer across the part. On the Eureka build, the serializer's
    slot count (a record's last slot) into the record port's ``ready``, the enable of its
    reorder buffer head (1,351 bits, each an enable). Each is three quarters routing or
    more; the units alone place faster.
    """

    PARAMS = (Param("pes", 4, 1, MOST_PES, "PE rows (CISS lanes)"),
              Param("cols", 2, 1, 16, "PE columns"),
              Param("vlen", 2, 1, 16, "lanes of each PE"),
              Param("tlen", 2, 1, 64, "chunks of each PE"),
              Param("spm_rows", 64, 2, 1 << 16, "B's rows a scratchpad holds", pow2=True),
              Param("out_rows", 64, 1, 1 << 15, "rows of a band at most"),
              Param("depth", 1024, 4, 1 << 16, "the Tailor's CISS entries", pow2=True),
              Param("fifo", 64, 2, 1 << 15, "the Tailor's FIFO region", pow2=True),
              Param("tile", 1 << 16, 8, 1 << 24, "a band's longest CISS stream", pow2=True),
              Param("dw", 16, 2, 32, "bits of a value"),
              Param("iw", 16, 4, 32, "bits of an index"),
              Param("acc_width", 32, 2, 64, "bits of an accumulator"),
              Param("tags", 8, 2, 64, "reads in flight of each tagged unit", pow2=True),
              Param("data", 64, 32, 512, "bits of the AXI data bus", pow2=True),
              Param("order", 2, 2, 3, "2: matrices (CSR); 3: tensors (COO, SpMTTKRP)"),
              choice("engine", "tensaurus", ENGINES, "the engine: Tensaurus's array (SpMM, "
                     "SpMV, SpMTTKRP), Gustavson's PEs (SpGEMM) or an Eureka sub-array "
                     "row (pruned GEMM)"),
              TILE_COLS,
              Param("lanes", 4, 2, 16, "Gustavson: records a word of C", pow2=True),
              Param("inflight", 16, 4, 256, "Gustavson: B rows a PE reads ahead, and "
                                            "elements a CSR reader reads ahead"),
              COMPACTION,
              BUFFER,
              CURSORS)
    REPORT = ({}, {"engine": "eureka"}, {"engine": "gustavson"})
    LEAST_DEVICE = "85k"
    """Where the report places it (``--device auto``): the LFE5U-85F. The 45F holds the
    Tensaurus build's cells, but router1 ran on there for over half an hour without
    routing it."""
    ROUTER = "router2"
    """How the report routes it (:data:`~sparseforge.synth.flow.ROUTERS`): router2, with its
    timing-driven rip-up, on every seed. On the 85F router1's rip-up stalls on most seeds
    (congestion local to the units' handshakes, which a sparser placement does not
    relieve), and a seed it gives up on is placed again for router2."""
    PARTS = ()
    """Its units for the synthesis report's area by part (no paper gives their shares):
    set by the engine's builder, as the units differ by engine."""
    ADDR = 24
    """Bits of a word address on every port (and of a row pointer)."""

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        for name, value in v.items():
            setattr(self, name, value)
        self.regs = RegisterFile(addr_width=8)
        self.after = {}                     # in-order ports ordered after a write port's
        widths = getattr(self, f"_{self.engine}")()
        self.master = AxiMaster(
            widths=widths, after=self.after, reads=len(widths["tagged"]),
            ordered=len(widths["ordered"]),
            writes=len(widths["write"]), addr_width=self.ADDR, tag=ceil_log2(self.tags),
            data=self.data)
        super().__init__({
            "s_axil": In(pins(AxiLiteSignature(8, 32))),
            "m_axi": Out(self.master.signature.members["m_axi"].signature),
        })

    def _tensaurus(self):
        """The Tensaurus engine's units; the master's port widths by kind."""
        A, P, order = self.ADDR, self.pes, self.order
        if order == 3 and P > MOST_TENSOR_PES:
            raise ParameterError(f"pes={P}: a build of order 3 takes at most "
                                 f"{MOST_TENSOR_PES} PE rows (three in-order read ports "
                                 "a row)")
        entry = ciss_entry_layout(P, self.dw, self.iw, order).size
        self.chunks = self.tlen * self.cols
        self.control = AccelControl(self.depth, self.fifo, self.tlen, self.chunks, self.vlen,
                                    A, self.iw, ceil_log2(self.tile))
        self.feed = ConverterFeed(A, self.iw, self.out_rows, entry)
        self.converter = CsrTileToCiss(pes=P, dw=self.dw, iw=self.iw, addr_width=A,
                                       band=self.out_rows, order=order)
        self.held = HeldTile(addr_width=A, depth=self.depth, width=entry, fifo=self.fifo,
                             tile=self.tile, tags=self.tags)
        self.tensaurus = Tensaurus(rows=P, cols=self.cols, vlen=self.vlen, tlen=self.tlen,
                                   dw=self.dw, iw=self.iw, acc_width=self.acc_width, order=order,
                                   tags=self.tags, spm_rows=self.spm_rows,
                                   out_rows=self.out_rows, addr_width=A)
        self.status = RunStatus(report_layout(ceil_log2(self.tile), 32),
                                self.tensaurus.stats.payload.shape())
        self.widths = {"tiles": wire.width(wire.ACCEL_TILE),
                       "rowptr": self.iw if order == 3 else A, "colid": self.iw,
                       "value": self.dw, "mlu": self.cols * self.vlen * self.dw,
                       "out": self.vlen * self.acc_width}
        self.fields = {f.name: f.width for f in wire.element_entry(self.iw, self.dw, order)}
        ordered = (self.widths["tiles"], self.widths["rowptr"], self.iw,
                   *(width for width in self.fields.values() for _ in range(P)))
        self.offsets = [Offset(A, width) for width in ordered[1:]]
        self.zips = [Zip(A, self.fields) for _ in range(P)]
        self.PARTS = (("AXI master", "master", None),
                      ("sequencer", "control", None), ("feed", "feed", None),
                      ("MINT converter", "converter", None), ("Tailor", "held", None),
                      ("Tensaurus", "tensaurus", None))
        return {"tagged": (self.widths["mlu"],), "ordered": ordered,
                "write": (self.widths["out"],)}

    def _gustavson(self):
        """The Gustavson engine with its readers and writer; the master's port widths."""
        if 0 < self.buffer < LEAST_BUFFER:
            raise ParameterError(f"buffer={self.buffer}: expected 0 or at least "
                                 f"{LEAST_BUFFER} (the accessor's words)")
        if self.pes > MOST_GUSTAVSON_PES:
            raise ParameterError(f"pes={self.pes}: a Gustavson build takes at most "
                                 f"{MOST_GUSTAVSON_PES} PEs (three in-order read ports a "
                                 "PE)")
        self.spgemm = Spgemm(self.pes, self.ADDR, self.buffer, self.cursors,
                             cols=self.tile_cols,
                             lanes=self.lanes, index_width=self.iw, value_width=self.dw,
                             acc_width=self.acc_width, inflight=self.inflight)
        self.status = RunStatus(report_layout(ceil_log2(self.tile), 32), 1)
        self.offsets = [Offset(self.ADDR, width) for _, width, _ in self.spgemm.reads]
        reads, writes = ([name for name, *_ in ports] for ports in (self.spgemm.reads,
                                                                     self.spgemm.writes))
        self.after = {reads.index(r): writes.index(w) for r, w in self.spgemm.after.items()}
        self.PARTS = (("AXI master", "master", None),
                      ("Gustavson", "spgemm", None))
        return {"tagged": (), "ordered": tuple(w for _, w, _ in self.spgemm.reads),
                "write": tuple(w for _, w in self.spgemm.writes)}

    def _eureka(self):
        """The Eureka engine (a sub-array row of ``cols`` sub-arrays); the master's port
        widths."""
        self.pruned = PrunedGemm(self.ADDR, self.compaction, self.dw, self.acc_width,
                                 COLS.check(self.cols), self.iw)
        self.status = RunStatus(report_layout(ceil_log2(self.tile), 32), 1)
        self.offsets = [Offset(self.ADDR, width) for _, width, _ in self.pruned.reads]
        self.PARTS = (("AXI master", "master", None),
                      ("Eureka", "pruned", None))
        return {"tagged": (), "ordered": tuple(w for _, w, _ in self.pruned.reads),
                "write": (self.pruned.tile.size,)}

    def elaborate(self, platform):
        m = Module()
        regs, status, master = self.regs, self.status, self.master
        for name in ("regs", "status", "master"):
            m.submodules[name] = getattr(self, name)
        wiring.connect(m, wiring.flipped(self.s_axil), regs.s_axil)
        wiring.connect(m, master.m_axi, wiring.flipped(self.m_axi))
        r = regs.regs
        issued, fault = getattr(self, f"_elaborate_{self.engine}")(m, r)

        # The run's state and counters.
        bus = master.m_axi
        m.d.comb += [
            status.start.eq(r.start), status.issued.eq(issued),
            status.idle.eq(master.idle), status.fault.eq(master.error | fault),
            status.ar_taken.eq(bus.arvalid & bus.arready), status.ar_len.eq(bus.arlen),
            status.ar_size.eq(bus.arsize),
            status.aw_taken.eq(bus.awvalid & bus.awready), status.aw_len.eq(bus.awlen),
            status.aw_size.eq(bus.awsize),
            r.busy.eq(status.busy), r.done.eq(status.done), r.error.eq(status.error),
            r.cycles.eq(status.cycles), r.bytes_read.eq(status.bytes_read),
            r.bytes_written.eq(status.bytes_written), r.refetched.eq(status.refetched),
        ]
        return m

    def _ordered(self, m, ports, bases, first):
        """In-order ``ports`` each moved to its base (``bases``, word addresses) onto the
        master's in-order ports from ``first``."""
        for k, (port, offset, base) in enumerate(zip(ports, self.offsets, bases, strict=True)):
            m.submodules[f"offset{k}"] = offset
            m.d.comb += offset.base.eq(base)
            wiring.connect(m, port, offset.port)
            wiring.connect(m, offset.mem, self.master.ordered[first + k])

    def _reads(self, m, r, engine):
        """``engine``'s in-order reads (its ``reads`` and ``ports()``), each at the base
        its register gives, onto the master's in-order ports."""
        bases = [getattr(r, f"{array}_base") >> wire.word_shift(width)
                 for _, width, array in engine.reads]
        self._ordered(m, engine.ports(), bases, 0)

    def _elaborate_eureka(self, m, r):
        """The Eureka engine's wiring: ``(issued, fault)``."""
        pruned, status, shift = self.pruned, self.status, wire.word_shift
        m.submodules.pruned = pruned
        cfg, slab, tile = pruned.config, pruned.reads[2][1], pruned.tile.size
        m.d.comb += [cfg.count.eq(r.tiles_count), cfg.passes.eq(r.passes),
                     cfg.b_panel.eq(r.b_panel >> shift(slab)),
                     cfg.out_base.eq(r.out_base >> shift(tile)),
                     cfg.out_panel.eq(r.out_panel >> shift(tile)),
                     pruned.start.eq(r.start & ~status.busy)]
        self._reads(m, r, pruned)
        wiring.connect(m, pruned.out, self.master.write[0])
        wiring.connect(m, pruned.stats, status.stats)
        m.d.comb += status.report.valid.eq(0)
        return pruned.busy, 0

    def _elaborate_gustavson(self, m, r):
        """The Gustavson engine's wiring: ``(issued, fault)``."""
        spgemm, status, master = self.spgemm, self.status, self.master
        m.submodules.spgemm = spgemm
        cfg, shift = spgemm.config, wire.word_shift
        m.d.comb += [cfg.tiles_count.eq(r.tiles_count), cfg.rows.eq(r.a_rows),
                     cfg.words_base.eq(r.out_base >> shift(spgemm.word.size)),
                     cfg.lengths_base.eq(r.out_rowlen_base
                                         >> shift(len(spgemm.c_lengths.request.payload.data))),
                     spgemm.start.eq(r.start & ~status.busy)]
        if self.buffer:
            kept, log = spgemm.kept_writes.request.payload.data, spgemm.tile_log.request.payload
            m.d.comb += [cfg.kept_base.eq(r.b_kept_base >> shift(len(kept))),
                         cfg.log_base.eq(r.tile_log_base >> shift(len(log.data))),
                         cfg.capacity.eq(r.hyte_capacity),
                         cfg.tiling.i.eq(r.a_rows), cfg.tiling.j.eq(r.hyte_j),
                         cfg.tiling.k.eq(r.hyte_k), cfg.tiling.order.eq(r.hyte_order),
                         cfg.tiling.bufsize.eq(r.hyte_bufsize),
                         *(getattr(cfg.tiling, f"log_t{d}").eq(getattr(r, f"hyte_log_t{d}"))
                           for d in wire.HYTE_DIMS)]
        self._reads(m, r, spgemm)
        for port, write in zip(spgemm.write_ports(), master.write, strict=True):
            wiring.connect(m, port, write)
        wiring.connect(m, spgemm.stats, status.stats)
        m.d.comb += status.report.valid.eq(0)
        return spgemm.busy, spgemm.fault

    def _elaborate_tensaurus(self, m, r):
        """The Tensaurus engine's wiring: ``(issued, fault)``."""
        control, feed, conv = self.control, self.feed, self.converter
        held, tens, status, master = self.held, self.tensaurus, self.status, self.master
        for name in ("control", "feed", "converter", "held", "tensaurus"):
            m.submodules[name] = getattr(self, name)
        # Registers (byte addresses) to the units (word addresses of their ports).
        cfg = control.config
        shift = {name: wire.word_shift(width) for name, width in self.widths.items()}
        m.d.comb += [
            cfg.tiles_base.eq(r.tiles_base >> shift["tiles"]),
            cfg.tiles_count.eq(r.tiles_count), cfg.passes.eq(r.passes),
            cfg.b_base.eq(r.b_base >> shift["mlu"]),
            cfg.b_panel.eq(r.b_panel >> shift["mlu"]),
            cfg.out_base.eq(r.out_base >> shift["out"]),
            cfg.out_panel.eq(r.out_panel >> shift["out"]),
            cfg.mv.eq(r.kernel == wire.TensaurusKernel.MV),
            cfg.mttkrp.eq(r.kernel == wire.TensaurusKernel.MTTKRP),
            cfg.c_base.eq(r.c_base >> shift["mlu"]),
            cfg.c_panel.eq(r.c_panel >> shift["mlu"]), cfg.c_rows.eq(r.c_rows),
            control.start.eq(r.start & ~status.busy),
            tens.kernel.eq(r.kernel[:2]), tens.direct.eq(0),
        ]

        # The sequencer's jobs: windows through the converter into the Tailor, tiles to
        # Tensaurus, pass commands to the Tailor's feed.
        wiring.connect(m, control.convert, feed.jobs)
        wiring.connect(m, feed.job, conv.job)
        wiring.connect(m, conv.ciss, feed.ciss)
        wiring.connect(m, conv.count, feed.count)
        wiring.connect(m, feed.entries, held.entries)
        wiring.connect(m, control.passes, held.passes)
        wiring.connect(m, control.compute, tens.start)
        wiring.connect(m, tens.tensor_mem, held.mem)

        # Memory: the tile list, A's arrays at their bases, B, Y.
        wiring.connect(m, control.tiles, master.ordered[0])
        ports = [conv.ptr, conv.cols]
        bases = [r.a_rowptr_base >> shift["rowptr"], r.a_colid_base >> shift["colid"]]
        for p, zip_ in enumerate(self.zips):
            m.submodules[f"zip{p}"] = zip_
            wiring.connect(m, conv.mem[p], zip_.port)
        arrays = {"col": r.a_colid_base >> shift["colid"], "k": r.a_kid_base >> shift["colid"],
                  "value": r.a_values_base >> shift["value"]}
        for name in self.fields:
            ports += [z.part(name) for z in self.zips]
            bases += [arrays[name]] * self.pes
        if self.order == 3:
            m.d.comb += conv.nnz.eq(r.a_colid_size >> shift["colid"])
        self._ordered(m, ports, bases, 1)
        wiring.connect(m, tens.matrix_mem, master.tagged[0])
        wiring.connect(m, tens.out_mem, master.write[0])

        wiring.connect(m, tens.stats, status.stats)
        wiring.connect(m, held.report, status.report)
        m.d.comb += feed.clear.eq(r.start & ~status.busy)
        return control.busy, feed.error
