# amaranth: UnusedElaboratable=no
"""MINT_m: one converter for Dense to COO, CSR and ZVC and ZVC to Dense, its conversion
chosen at run time (MINT Section V-A, Fig. 8a; its area in Section VII).

The separate converters (MINT_b: :mod:`.convert_dense`) each carry their own zero
detection, prefix sum and compaction network. Here one of each serves all four:

- zero detection and the prefix sum (:class:`~.convert_dense.NonzeroPositions`) take a
  dense vector, or for ZVC to Dense a mask word spread one bit a lane (a lane is
  nonzero exactly where its mask bit is set, so the sums are the mask's);
- one :class:`~.convert_dense.Compactor` packs the records of every Dense-to-X mode:
  each lane's record is the widest (``{row, col, value}``) and a mode reads the fields
  it needs; its marks carry CSR's row pointers and ZVC's mask words alike;
- the :class:`~.convert_dense.Expander` takes the positions in ZVC-to-Dense mode.

The mode only steers handshakes and the marks; no datapath is duplicated per mode.
"""

from amaranth.hdl import Module, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from ..sw.wire import MintMode
from .convert_dense import (
    LANES,
    LEVELS,
    WIDTH,
    Compactor,
    Expander,
    NonzeroPositions,
    column,
    coordinates,
)
from .interfaces import dense_layout, record_word_layout, struct


def mint_mark(lanes, ptr_width):
    """A mark of the merged converter: a CSR row pointer ``ptr`` or a ZVC ``mask`` word,
    and ``last`` on a matrix's final one."""
    return data.StructLayout({"ptr": ptr_width, "mask": lanes, "last": 1})


class MintMergedSignature(wiring.Signature):
    """The merged converter (MINT_m), seen from it: the Dense and ZVC conversions of the
    separate converters through one set of streams, ``mode`` choosing the conversion.

    - ``mode`` (in, :class:`~sparseforge.sw.wire.MintMode`): held while a matrix
      streams; change it only once the previous matrix's outputs have all left.
    - ``dense`` (stream in, :func:`~.interfaces.dense_layout`): a matrix, row-padded for
      Dense to COO and CSR, flat (``row_end`` 0) for Dense to ZVC.
    - ``mask`` and ``values`` (streams in): a matrix in ZVC, for ZVC to Dense, as
      :class:`ZvcToDenseSignature` takes them.
    - ``words`` (stream out, :func:`~sparseforge.hw.interfaces.record_word_layout` of
      :func:`~sparseforge.sw.wire.coo_entry`): the nonzeros, ``lanes`` a word, framed as
      :func:`~sparseforge.sw.wire.word_end` says; COO uses every field, CSR ``col`` and
      ``value``, ZVC ``value``.
    - ``marks`` (stream out, :func:`mint_mark`): CSR's ``row_ptr[1 .. rows]`` in ``ptr``,
      or ZVC's mask words in ``mask``, ``last`` on the final one.
    - ``expanded`` (stream out, :func:`~.interfaces.dense_layout`, flat): ZVC to Dense's vectors.
    """

    def __init__(self, lanes, width, index_width, ptr_width):
        entry = wire.coo_entry(index_width, width)
        super().__init__({
            "mode": In(MintMode),
            "dense": In(stream.Signature(dense_layout(lanes, width))),
            "mask": In(stream.Signature(struct(wire.zvc_mask(lanes)))),
            "values": In(stream.Signature(record_word_layout(width, lanes, count=False))),
            "words": Out(stream.Signature(record_word_layout(entry, lanes))),
            "marks": Out(stream.Signature(mint_mark(lanes, ptr_width))),
            "expanded": Out(stream.Signature(dense_layout(lanes, width, rows=False))),
        })


@block("mint_merged")
class MintMerged(wiring.Component):
    """MINT_m: Dense to COO, CSR or ZVC, or ZVC to Dense, as ``mode`` says.

    Parameters
    ----------
    lanes : L, values per vector and records per word (a power of two).
    width : bits of a value.
    index_width : bits of a row and a column id.
    ptr_width : bits of a CSR row pointer.
    levels : adder and multiplexer levels between pipeline registers.

    Members
    -------
    mode : In(MintMode)
    dense, mask, values : In(stream(...))
    words, marks, expanded : Out(stream(...))
        As :class:`~sparseforge.hw.mint_merged.MintMergedSignature` says: each mode emits
        on the streams its separate converter has, by these names.

    Structure: the row and column counters, :class:`~.convert_dense.NonzeroPositions`,
    a :class:`~.convert_dense.Compactor` and an :class:`~.convert_dense.Expander`.

    Latency and throughput: a Dense-to-X mode's are :class:`~.convert_dense.DenseToCoo`'s;
    ZVC to Dense takes zero detection's 2 cycles more than
    :class:`~.convert_dense.ZvcToDense`. One vector a cycle while the outputs are taken.

    Clock: just under 100 MHz on the ECP5-25k (the synthesis report). The critical path
    is the compactor's registered offset fanning out to every lane's spill choice and
    both word buffers: four logic levels, mostly routing across a design half again the
    size of the separate Dense to COO, which makes 100 MHz with the same compactor.
    """

    PARAMS = (LANES, WIDTH, Param("index_width", 16, 1, 32, "bits of a row and a column id"),
              Param("ptr_width", 32, 1, 48, "bits of a CSR row pointer"), LEVELS)
    REPORT = ({"lanes": 8, "width": 16, "index_width": 16, "ptr_width": 32},)
    MERGES = ("dense_to_coo", "dense_to_csr", "dense_to_zvc", "zvc_to_dense")
    """The separate converters (MINT_b) it replaces, each at its first report
    configuration, which this one's matches; ``synth --report`` prints the ratio."""
    MERGES_PAPER = ("MINT_m 0.41 mm2 = 43% of MINT_b's 0.95 (-57%, Sec. VII, 28 nm, all of "
                    "Fig. 8's conversions; its dividers are 74% of MINT_m)")

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width, self.index_width = v["lanes"], v["width"], v["index_width"]
        self.ptr_width, self.levels = v["ptr_width"], v["levels"]
        self.record = struct(wire.coo_entry(self.index_width, self.width))
        tag = data.StructLayout({"row": self.index_width, "col": self.index_width,
                                 "row_end": 1})
        self.nonzeros = NonzeroPositions(self.lanes, self.width, tag, self.levels)
        self.compactor = Compactor(self.lanes, self.record.size, self.levels, self.lanes,
                                   self.ptr_width)
        self.expander = Expander(self.lanes, self.width)
        self.latency = self.nonzeros.latency + self.compactor.latency
        super().__init__(MintMergedSignature(self.lanes, self.width, self.index_width,
                                             self.ptr_width))

    def elaborate(self, platform):
        m = Module()
        m.submodules.nonzeros = nonzeros = self.nonzeros
        m.submodules.compactor = compactor = self.compactor
        m.submodules.expander = expander = self.expander
        L, mode = self.lanes, self.mode
        expand = mode == MintMode.ZVC_TO_DENSE

        # In: a dense vector, or a mask word one bit a lane.
        given, dense, mask = nonzeros.vectors, self.dense, self.mask
        at = coordinates(m, dense, L, self.index_width)
        m.d.comb += [
            given.valid.eq(Mux(expand, mask.valid, dense.valid)),
            dense.ready.eq(given.ready & ~expand), mask.ready.eq(given.ready & expand),
            given.payload.last.eq(Mux(expand, mask.payload.last, dense.payload.last)),
            given.payload.tag.row.eq(at["row"]), given.payload.tag.col.eq(at["col"]),
            given.payload.tag.row_end.eq(dense.payload.row_end),
        ]
        m.d.comb += [given.payload.values[i].eq(Mux(expand, mask.payload.mask[i],
                                                     dense.payload.lanes[i]))
                     for i in range(L)]

        # The positions go to the compactor, or to the expander.
        found, vectors = nonzeros.positions, compactor.vectors
        m.d.comb += [
            vectors.valid.eq(found.valid & ~expand),
            expander.vectors.valid.eq(found.valid & expand),
            found.ready.eq(Mux(expand, expander.vectors.ready, vectors.ready)),
        ]
        for target in (vectors.payload, expander.vectors.payload):
            m.d.comb += [target.mask.eq(found.payload.mask), target.sums.eq(found.payload.sums),
                         target.total.eq(found.payload.total),
                         target.last.eq(found.payload.last)]
        tag = found.payload.tag
        for i in range(L):
            record = data.View(self.record, vectors.payload.records[i])
            m.d.comb += [record.row.eq(tag.row),
                         record.col.eq(column(tag.col, i, L, self.index_width)),
                         record.value.eq(found.payload.values[i])]
        csr_mark = (mode == MintMode.DENSE_TO_CSR) & (tag.row_end | found.payload.last)
        m.d.comb += [vectors.payload.mark.eq(csr_mark | (mode == MintMode.DENSE_TO_ZVC)),
                     vectors.payload.tag.eq(found.payload.mask)]

        # Out: the compactor's words and marks, the expander's vectors.
        words, marks = compactor.words, compactor.marks
        m.d.comb += [
            self.words.valid.eq(words.valid), words.ready.eq(self.words.ready),
            self.words.payload.eq(words.payload),
            self.marks.valid.eq(marks.valid), marks.ready.eq(self.marks.ready),
            self.marks.payload.ptr.eq(marks.payload.position),
            self.marks.payload.mask.eq(marks.payload.tag),
            self.marks.payload.last.eq(marks.payload.last),
        ]
        wiring.connect(m, wiring.flipped(self.values), expander.values)
        wiring.connect(m, expander.dense, wiring.flipped(self.expanded))
        return m
