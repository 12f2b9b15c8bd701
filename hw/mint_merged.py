# amaranth: UnusedElaboratable=no
"""MINT_m: one converter for Dense to COO, CSR, ZVC, CSF and RLC, ZVC, COO and CSR to Dense,
RLC, BSR and CSF to COO, CSR to BSR, CSR and COO to CSC and CSR to CISS, its conversion
chosen at run time (MINT Section V-A, Fig. 8a; its area in Section VII-B).

The separate converters (MINT_b: :mod:`.convert_dense`, :mod:`.convert_rlc`,
:mod:`.convert_csf`, :mod:`.convert_bsr`, :mod:`.convert_csc`) each carry their own
zero detection, prefix sums, dividers and compaction, serialization, tree construction,
blocking or sort. Here one of each serves every mode, and the conversions that compute
coordinates share the paper's eight-lane divide and modulo unit:

- zero detection and the prefix sum of the nonzeros (:class:`~.convert_dense.NonzeroPositions`)
  take a dense vector, an RLC vector's values (a filler is a zero) or, for ZVC to Dense,
  a mask word spread one bit a lane (a lane is nonzero exactly where its mask bit is set,
  so the sums are the mask's): each kept element's place in the output;
- one position prefix sum and one :class:`~.divider.DivMod` of ``lanes`` lanes give every
  element its row-major position and from it its row (the quotient by the column count
  K) and column (the remainder), the divider a level a row's bit (``quotient_width``) and
  its partial remainders a column count wide, not a position's levels and width: RLC's
  distances (``run + 1``, the matrix's first pair ``run``) as Fig. 8d sums them, and a
  dense element's one (a padding lane's none) as Fig. 8f does, so Dense to COO, CSR and
  CSF divide as the paper draws it instead of counting (a 3-D tensor as the ``I*J x K``
  matrix of its fibers: the quotient is the fiber, the remainder ``k``);
- one :class:`~.convert_dense.Compactor` packs the records of every mode but ZVC to Dense:
  each lane's record is the widest (``{row, col, value}``) and a mode reads the fields it
  needs; its marks carry CSR's row pointers and ZVC's mask words alike;
- the :class:`~.convert_dense.Expander` takes the positions in ZVC-to-Dense mode;
- :class:`FiberTree` takes the divided positions in Dense-to-CSF mode in the compactor's
  place (CSF's level records are a vector's lanes, masked, not packed): comparators on
  consecutive fibers give ``(i, j)``, and the leaves' pointers come from the nonzeros'
  prefix sum above;
- CSR to BSR (Fig. 8e) is :class:`~.convert_bsr.CsrBlocks` (block rows, the row tags,
  the banks, the merge's comparators, the assembler's flags) around the shared divider:
  a tagged nonzero enters the position scan as lane 0's count of a one-vector sequence,
  so its position is its column, and the divider's lane 0 gives its block column and
  its column within the block (C the divisor). The block-row pointers keep their
  one-lane prefix sum: the shared scan is busy with the block row's nonzeros when the
  assembler counts its blocks, and the nonzeros wait on the banks the counts free, so
  sharing it would need an arbiter and could deadlock;
- CSR to CSC (Fig. 8c) is :class:`~.convert_csc.CsrToCsc` (its counting sort: counters,
  cluster counter, scratchpad) with its column pointers' prefix sum on the shared
  position scan, free in that mode (the counter words are read after the count, while
  nothing else flows): the scan is inclusive and the pointers exclusive, so each word
  enters moved up a lane with the word before's last count in lane 0, and its inclusive
  sums are the word's exclusive ones. The CSR comes in on CSR to BSR's ``row_ptr`` and
  ``entries``; COO to CSC is the same sort in its COO mode, the records on COO to
  Dense's ``records``, one pass keyed on the column (stable: CSC where each column's
  records come in row order, row-major or column-major);
- Dense to RLC is :class:`~.convert_rlc.DenseToRlc`'s run lengths
  (:class:`~.convert_rlc.RunLengths`: its own zero detection, on the dense elements, and
  segmented scan) and :class:`~.convert_rlc.Fillers` before the shared zero detection and
  prefix sum, which find and count the pairs (a filler, value 0, enters as 1 with its
  run's spare top bit set), and the shared compactor, which packs them (the run in a
  record's ``col``, the filler bit in its ``row``); the pairs skip the position scan and
  the divider (their runs are not positions), and an :class:`~.convert_rlc.EndMarker`
  puts ``last`` on the final vector. The separate block's pair prefix sum, compactor and
  the register slice between them are what it shares;
- COO and CSR to Dense share one :class:`~.convert_expand.CooToDense` (each record's
  position, a multiply by shifts, then the fill), CSR's records from a
  :class:`~.convert_expand.CsrToCoo`, where the separate COO-to-Dense and CSR-to-Dense
  blocks have one each; nothing else of MINT_m fits them (the expander places packed
  values by a mask's sums, as :mod:`.convert_expand` says), so they share only the
  ``expanded`` output with ZVC to Dense;
- BSR to COO is :class:`~.convert_bsr.BsrToCoo`'s :class:`~.convert_bsr.SliceWalker`
  (each block row's blocks read R times, the block-row pointers on CSR's ``row_ptr``) and
  :class:`~.convert_bsr.Slicer` (a block's row ``i`` on pass ``i``, its coordinates from
  counters: no position to divide) before the shared zero detection, prefix sum and
  compactor, which drop the fill and pack the nonzeros, C a vector, into COO words
  (where the separate block's end marker and serializer send one a cycle); the row
  slice's row and columns ride beside the vector in the lanes' distances' place;
- CSF to COO is :class:`~.convert_csf.CsfToCoo` (its serializers and tree walk, one
  leaf a cycle): its comparators of fptr entries with the leaves and fibers walked share
  nothing with the rest (no position, no packing: a leaf a cycle), so only the mode's
  gating is added;
- CSR to CISS (Tensaurus Section 4) is :class:`~.convert_ciss.CsrToCiss`'s units:
  :class:`~.convert_ciss.SliceLengths` (its row pointers on CSR's ``row_ptr``, its rows
  on ``dense_shape``), :class:`~.convert_ciss.LeastLoaded`, a
  :class:`~.convert_ciss.LaneFetch` a PE row, each reading its rows' elements through
  its own memory port, and :class:`~.convert_ciss.Interleave`. Its prefix sums are CSR's
  own pointers and its comparators the least-loaded choice between every pair of lanes,
  kept as running differences: none of MINT_m's scans or comparators fits them.

The mode only steers handshakes and the marks; no datapath is duplicated per mode.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from ..sw.wire import MintMode
from .convert_bsr import TAGS, CsrBlocks, CsrToBsrSignature, Slicer, SliceWalker, slice_tag_layout
from .convert_ciss import CsrToCissSignature, SliceLengths, _schedule_and_fetch
from .convert_csc import CsrToCsc, CsrToCscSignature
from .convert_csf import MODES, CsfToCoo, LevelRecords, TreeMarks, level_streams
from .convert_dense import (
    LANES,
    LEVELS,
    WIDTH,
    Compactor,
    Expander,
    NonzeroPositions,
    position_bits,
)
from .convert_expand import WIDTH as WIDE
from .convert_expand import CooToDense, CsrToCoo, coo_records, matrix_shape
from .convert_rlc import QUEUE, EndMarker, Fillers, RunLengths, event_layout, rlc_vector_layout
from .divider import DivMod
from .interfaces import dense_layout, divmod_layout, prefix_sum_layouts, record_word_layout, struct
from .mint_units import popcount
from .pipeline import Pipeline
from .prefix_sum import PrefixSum
from .stream_units import Beside, Lockstep, MemoryPortSignature, Queue, Skid


def ciss_width(width):
    """Bits of a CISS value for values of ``width`` bits: at least 2 (a CISS value is two's
    complement, :class:`~sparseforge.sw.wire.CissWire`)."""
    return max(width, 2)


def divisor_bits(index_width, block_cols, position_width):
    """Bits of the merged converter's divisor (``columns``, or C in CSR to BSR): up to
    ``2**index_width`` columns, and C, within the positions' bits."""
    return min(position_width, max(index_width + 1, block_cols.bit_length()))


def mint_mark(lanes, ptr_width):
    """A mark of the merged converter: a CSR row pointer ``ptr`` or a ZVC ``mask`` word,
    and ``last`` on a matrix's final one."""
    return data.StructLayout({"ptr": ptr_width, "mask": lanes, "last": 1})


class FiberTree(wiring.Component):
    """The CSF tree of a dense 3-D tensor from its elements' fiber coordinates: MINT's tree
    construction (Section V-B4, Fig. 8f steps 5-7), after the divider.

    The tensor is the ``I*J x K`` matrix of its fibers, so the divider gives each element
    its fiber (the quotient by K) and its ``k`` (the remainder). ``(i, j)`` come from
    comparators on consecutive fibers, as :class:`~.convert_csf.FiberStarts` finds them in
    COO: with ``K >= L`` a vector holds at most one lane of ``k = 0``, where the next fiber
    begins; ``(i, j)`` of the current fiber are registers, and the next is ``(i, j + 1)``,
    or ``(i + 1, 0)`` past ``j = J - 1`` (a slice begins), so the lanes at and past the one
    take the next. ``i + 1``, ``j + 1`` and whether ``j = J - 1`` are registers as well,
    set as ``(i, j)`` move (``J - 1`` a register of the held ``fibers``), so the next fiber
    is two multiplexers from registers, not an adder and a compare. (A second division of
    the fiber by J would cost the divider a second pass.) :class:`~.convert_csf.TreeMarks`
    then finds each fiber's and slice's first leaf; each level's node counts are a register
    and, within the vector, the leaves' from the nonzeros' prefix sum and the fibers' and
    slices' (at most two a vector) from adders; :class:`~.convert_csf.LevelRecords` sends
    the records.

    Parameters
    ----------
    lanes : L, elements a vector.
    index_width, count_width, value_width : bits of a coordinate, of counts and pointers,
        of a value.
    fibers_width : bits of ``fibers``.

    Members
    -------
    fibers : In(fibers_width)
        J, the tensor's fibers a slice (its ``dim1``), held from the cycle before its
        first vector until its last is taken.
    vectors : In(stream({cols[L], values[L], mask, sums[L], total, last}))
        Each lane's ``k`` (its remainder by K), value and nonzero bit, the nonzeros before
        each lane and through the vector (modulo ``2 * L``, as
        :class:`~.convert_dense.NonzeroPositions` counts them), ``last`` on the tensor's
        final vector. Lanes past the tensor's last element are zero.
    level0, level1, level2 : Out(stream(:func:`~.convert_csf.csf_level_layout`))
        As :class:`~.convert_csf.DenseToCsfSignature` says.

    Latency and throughput: 3 cycles (the marks, the counts, the levels' registers); one
    vector a cycle while its records are taken. Between registers: the lanes' fiber compare and
    ``(i, j)`` multiplexers (their inputs registers); the marks' segmented OR; the counts'
    adders.
    """

    def __init__(self, lanes, index_width, count_width, value_width, fibers_width):
        self.lanes, self.index_width = lanes, index_width
        self.count_width, self.value_width = count_width, value_width
        position = position_bits(lanes)
        self.tag = data.StructLayout({
            "ids": data.ArrayLayout(data.ArrayLayout(index_width, MODES), lanes),
            "values": data.ArrayLayout(value_width, lanes),
            "sums": data.ArrayLayout(position, lanes), "total": position, "last": 1})
        self.latency = TreeMarks.latency + 2
        super().__init__({
            "fibers": In(fibers_width),
            "vectors": In(stream.Signature(data.StructLayout({
                "cols": data.ArrayLayout(index_width, lanes),
                "values": data.ArrayLayout(value_width, lanes), "mask": lanes,
                "sums": data.ArrayLayout(position, lanes), "total": position, "last": 1}))),
            **level_streams(Out, lanes, index_width, count_width, value_width)})

    def elaborate(self, platform):
        m = Module()
        L, w = self.lanes, self.index_width
        m.submodules.marks = marks = Lockstep({"marks": TreeMarks(L)}, self.tag)
        m.submodules.records = records = LevelRecords(L, w, self.count_width,
                                                      self.value_width)
        for n in range(MODES):
            wiring.connect(m, getattr(records, f"level{n}"),
                           wiring.flipped(getattr(self, f"level{n}")))
        given, into = self.vectors, marks.given
        m.d.comb += [into.valid.eq(given.valid), given.ready.eq(into.ready)]

        # The fibers: the current one's (i, j), their successors, whether j is its slice's
        # last (J - 1) and whether none has begun in the tensor, all registers, so the next
        # fiber's (i, j) is two multiplexers; the adders and the compare run beside them
        # into the registers. ``fibers`` is held, so ``J - 1`` is a register too.
        i, j, fresh = Signal(w), Signal(w), Signal(init=1)
        i_up, j_up, last = Signal(w), Signal(w), Signal()
        fibers_less = Signal.like(self.fibers - 1)
        m.d.sync += fibers_less.eq(self.fibers - 1)
        wrap = Signal()                                 # the next fiber begins a slice
        next_i, next_j = Signal(w), Signal(w)
        m.d.comb += [wrap.eq(fresh | last),
                     next_i.eq(Mux(fresh, 0, Mux(last, i_up, i))),
                     next_j.eq(Mux(wrap, 0, j_up))]
        # A signal of its own: a port partly computed and partly passed through would leave
        # bits unread in the Verilog.
        begins = Signal(L)
        m.d.comb += begins.eq(Cat(col == 0 for col in given.payload.cols))
        tag = into.payload.tag
        for lane in range(L):
            on = begins[:lane + 1].any()                # past this vector's fiber start
            m.d.comb += [tag.ids[lane][0].eq(Mux(on, next_i, i)),
                         tag.ids[lane][1].eq(Mux(on, next_j, j)),
                         tag.ids[lane][2].eq(given.payload.cols[lane])]
        m.d.comb += [into.payload.marks.leaves.eq(given.payload.mask),
                     into.payload.marks.fiber_starts.eq(begins),
                     into.payload.marks.slice_starts.eq(Mux(wrap, begins, 0)),
                     tag.values.eq(given.payload.values), tag.sums.eq(given.payload.sums),
                     tag.total.eq(given.payload.total), tag.last.eq(given.payload.last)]
        with m.If(given.valid & given.ready):
            with m.If(begins.any()):
                m.d.sync += [i.eq(next_i), j.eq(next_j), fresh.eq(0),
                             i_up.eq(next_i + 1), j_up.eq(next_j + 1),
                             last.eq(Mux(wrap, fibers_less == 0, j_up == fibers_less))]
            with m.If(given.payload.last):
                m.d.sync += fresh.eq(1)

        # Each level's node counts, before the vector (registers) and within it, give the
        # pointers; the records are registered before the levels' output registers.
        marked, out = marks.taken, records.records
        tag, nodes = marked.payload.tag, marked.payload.marks
        pipe = Pipeline(m, marked, out)
        bases = [Signal(self.count_width, name=f"base{n}") for n in range(MODES)]
        leaves = tag.sums[0]

        def after(sum_):                # the leaves from the vector's first lane, to its sum
            return pipe.wire((sum_ - leaves)[:len(leaves)], "leaves")

        within = [[popcount(nodes[f"level{n}"][:lane], pipe.wire) for lane in range(L)]
                  for n in range(MODES - 1)]
        within.append([after(tag.sums[lane]) for lane in range(L)])
        counts = [popcount(nodes[f"level{n}"], pipe.wire) for n in range(MODES - 1)]
        counts.append(after(tag.total))
        totals = [pipe.wire(bases[n] + counts[n], f"total{n}") for n in range(MODES)]
        children = [[pipe.wire(bases[n + 1] + within[n + 1][lane], f"child{n}_{lane}")
                     for lane in range(L)] for n in range(MODES - 1)]
        children.append(list(tag.values))
        with m.If(pipe.advance & pipe.valid):
            m.d.sync += [base.eq(Mux(tag.last, 0, total)) for base, total in zip(
                bases, totals, strict=True)]
        held = pipe.stage({"ids": list(tag.ids), "masks": [nodes[f"level{n}"] for n in
                                                           range(MODES)],
                           "totals": totals, "children": children, "last": tag.last})
        pipe.finish()
        for n in range(MODES):
            record = out.payload[f"level{n}"]
            m.d.comb += [record.mask.eq(held["masks"][n]), record.last.eq(held["last"]),
                         record.total.eq(held["totals"][n])]
            for lane in range(L):
                m.d.comb += [record.lanes[lane].id.eq(held["ids"][lane][n * w:(n + 1) * w]),
                             record.lanes[lane].data.eq(held["children"][n][lane])]
        return m


class MintMergedSignature(wiring.Signature):
    """The merged converter (MINT_m), seen from it: the conversions of the separate
    converters through one set of streams, ``mode`` choosing the conversion.

    - ``mode`` (in, :class:`~sparseforge.sw.wire.MintMode`): held while a matrix
      streams; change it only once the previous matrix's inputs have all been taken and
      its outputs have all left (CSR to CSC takes an empty matrix's row pointers after its
      column pointers leave).
    - ``columns`` (in, :func:`divisor_bits`): the matrix's column count (the paper's K,
      the divisor of Fig. 8d and 8f; a tensor's ``dim2``), at most ``2**index_width``,
      held as ``mode`` is; Dense to COO, CSR and CSF and RLC to COO need it.
    - ``fibers`` (in, ``position_width`` bits): a tensor's ``dim1`` (J, its fibers a
      slice), held as ``mode`` is; Dense to CSF needs it.
    - ``dense`` (stream in, :func:`~.interfaces.dense_layout`): a matrix, row-padded for
      Dense to COO and CSR, flat (``row_end`` 0) for Dense to ZVC; for Dense to CSF a 3-D
      tensor, flat in row-major order, ``dim2`` at least ``lanes``, the lanes past its
      last element zero.
    - ``mask`` and ``values`` (streams in): a matrix in ZVC, for ZVC to Dense, as
      :class:`~.convert_dense.ZvcToDenseSignature` takes them.
    - ``pairs`` (stream in, :func:`~.convert_rlc.rlc_vector_layout`): a matrix in RLC, for
      RLC to COO, as :class:`~.convert_rlc.RlcToCooSignature` takes it, except that a
      matrix with no nonzeros sends one vector (of (0, 0) pairs, ``last`` set).
    - ``words`` (stream out, :func:`~sparseforge.hw.interfaces.record_word_layout` of
      :func:`~sparseforge.sw.wire.coo_entry`): the nonzeros, ``lanes`` a word, framed as
      :func:`~sparseforge.sw.wire.word_end` says; COO (from Dense or RLC) uses every
      field, CSR ``col`` and ``value``, ZVC ``value``.
    - ``marks`` (stream out, :func:`mint_mark`): CSR's ``row_ptr[1 .. rows]`` in ``ptr``,
      or ZVC's mask words in ``mask``, ``last`` on the final one.
    - ``expanded`` (stream out, :func:`~.interfaces.dense_layout`, flat): ZVC to Dense's vectors.
    - ``rlc`` (stream out, :func:`~.convert_rlc.rlc_vector_layout`): Dense to RLC's pairs,
      as :class:`~.convert_rlc.DenseToRlcSignature`'s ``pairs`` (from a flat ``dense``).
    - ``dense_shape`` and ``records`` (streams in, ``position_width`` bits): COO to Dense's
      ``shape`` and ``records``, as :class:`~.convert_expand.CooToDenseSignature` says;
      CSR to Dense takes ``dense_shape`` and the CSR on ``row_ptr`` and ``entries`` (as
      CSR to BSR does). Both send their dense vectors on ``expanded``.
    - ``level0`` .. ``level2`` (streams out, :func:`~.convert_csf.csf_level_layout`, counts
      and pointers of ``ptr_width`` bits): Dense to CSF's levels, as
      :class:`~.convert_csf.DenseToCsfSignature` says.
    - ``row_ptr``, ``entries`` (streams in) and ``block_ptr``, ``blocks`` (streams out): a
      matrix in CSR and its BSR of ``block`` (R, C) blocks, for CSR to BSR, as
      :class:`~.convert_bsr.CsrToBsrSignature` says (columns, pointers and counts of
      ``ptr_width`` bits, columns below ``2**position_width``).
    - ``shape``, ``col_ids`` (streams in) and ``col_ptr``, ``csc`` (streams out), with
      ``row_ptr`` and ``entries`` as CSR to BSR takes them: a matrix in CSR and its CSC,
      for CSR to CSC, as :class:`~.convert_csc.CsrToCscSignature` says of a matrix of at
      most ``csc`` (rows, columns, nonzeros), except that ``row_ptr`` carries every
      pointer (the first, 0, is dropped) and ``entries`` the columns in ``ptr_width``
      bits; COO to CSC takes ``shape``, ``col_ids`` and its records on ``records`` (its
      ``coo``, rows and columns truncated to the sort's widths), each column's records in
      row order.
    - ``bsr_mem`` (memory port out, :class:`~.stream_units.MemoryPortSignature`): BSR to
      COO's block reads, as :class:`~.convert_bsr.BsrToCooSignature`'s ``mem`` (block
      words as CSR to BSR's ``blocks`` carries them), the block-row pointers on
      ``row_ptr``; the nonzeros leave on ``words`` as Dense to COO's do (rows and columns
      of ``index_width`` bits).
    - ``csf0`` .. ``csf2`` (streams in) and ``tensor`` (stream out,
      :func:`~sparseforge.sw.wire.tensor_record`): a 3-D tensor's CSF levels and its COO
      records, for CSF to COO, as :class:`~.convert_csf.CsfToCooSignature`'s ``level0`` ..
      ``level2`` and ``records`` (counts and pointers of ``ptr_width`` bits).
    - ``ciss_mem`` (``ciss[0]`` memory ports out), ``ciss`` and ``ciss_count`` (streams
      out): CSR to CISS for ``ciss[0]`` PE rows and ``ciss[1]``-bit element indices, as
      :class:`~.convert_ciss.CsrToCissSignature`'s ``mem``, ``ciss`` and ``count``; the
      matrix's rows come in ``dense_shape``'s ``rows`` (its other fields unread) and its
      row pointers on ``row_ptr``, every one (the first, 0, is dropped).
    """

    def __init__(self, lanes, width, index_width, ptr_width, run_bits, position_width,
                 block=(2, 2), csc=(1024, 1024, 4096), ciss=(4, 20)):
        entry = wire.coo_entry(index_width, width)
        ciss_members = CsrToCissSignature(ciss[0], ciss_width(width), index_width,
                                          ciss[1]).members
        trees = level_streams(In, lanes, index_width, ptr_width, width).values()
        super().__init__({
            "mode": In(MintMode),
            "columns": In(divisor_bits(index_width, block[1], position_width)),
            "fibers": In(position_width),
            "dense": In(stream.Signature(dense_layout(lanes, width))),
            "mask": In(stream.Signature(struct(wire.zvc_mask(lanes)))),
            "values": In(stream.Signature(record_word_layout(width, lanes, count=False))),
            "pairs": In(stream.Signature(rlc_vector_layout(lanes, run_bits, width))),
            "words": Out(stream.Signature(record_word_layout(entry, lanes))),
            "marks": Out(stream.Signature(mint_mark(lanes, ptr_width))),
            "expanded": Out(stream.Signature(dense_layout(lanes, width, rows=False))),
            "rlc": Out(stream.Signature(rlc_vector_layout(lanes, run_bits, width))),
            "dense_shape": In(stream.Signature(matrix_shape(position_width))),
            "records": In(coo_records(position_width, width)),
            **level_streams(Out, lanes, index_width, ptr_width, width),
            **CsrToBsrSignature(block, ptr_width, width).members,
            **{name: member for name, member
               in CsrToCscSignature(lanes, *csc, width).members.items()
               if name in ("shape", "col_ids", "col_ptr", "csc")},
            "bsr_mem": Out(MemoryPortSignature(ptr_width, wire.width(
                wire.bsr_block(ptr_width, width, block)))),
            **{f"csf{n}": member for n, member in enumerate(trees)},
            "tensor": Out(stream.Signature(struct(wire.tensor_record(index_width, width)))),
            "ciss_mem": ciss_members["mem"], "ciss": ciss_members["ciss"],
            "ciss_count": ciss_members["count"],
        })


@block("mint_merged")
class MintMerged(wiring.Component):
    """MINT_m: Dense to COO, CSR, ZVC, CSF or RLC, ZVC, COO or CSR to Dense, RLC, BSR or CSF
    to COO, CSR to BSR, CSR or COO to CSC, CSR to CISS, as ``mode`` says.

    Parameters
    ----------
    lanes : L, values (or RLC pairs) per vector, records per word and divider lanes (a
        power of two; the paper's MINT divides eight a cycle).
    width : bits of a value (its bits: zero when all of them are; an RLC filler is 0).
    index_width : bits of a row and a column id, and of a tensor's coordinates.
    ptr_width : bits of a CSR row pointer and of CSF's node counts and pointers.
    run_bits : bits of an RLC run (at most ``index_width``: Dense to RLC's runs travel in
        the records' columns).
    position_width : P, bits of a row-major position: a matrix of up to ``2**P`` elements
        (and rows and columns up to ``2**index_width``). Positions are summed modulo
        ``2**P``.
    levels : adder and multiplexer levels between pipeline registers (zero detection's
        prefix sum and the compaction network).
    divide_levels : quotient bits between the divider's pipeline registers.
    quotient_width : Q, bits of the divider's quotients (0: ``index_width``; at most P):
        a matrix's rows, a tensor's fibers (``I*J``), CSR to BSR's block columns are at
        most ``2**Q``. The divider runs Q levels, not P (a position's quotient is a row,
        not a position), and its divisor (``columns``, or C) is read in
        ``index_width + 1`` bits (at least C's), enough for ``2**index_width`` columns.
    block_rows, block_cols : R and C, CSR to BSR's blocks (C the divisor in that mode).
    depth : nonzeros a CSR-to-BSR scratchpad bank holds, as
        :class:`~.convert_bsr.CsrToBsr`'s ``depth`` (its rows, but each block row's last,
        fit ``depth + 1``).
    max_rows, max_cols, max_nnz : CSR to CSC's largest matrix, as
        :class:`~.convert_csc.CsrToCsc`'s (its pointers, ``ceil_log2(max_nnz + 1)`` bits,
        fit ``position_width`` and ``ptr_width``).
    pes, addr_width, inflight : CSR to CISS's PE rows, element indices and reads in
        flight a lane, as :class:`~.convert_ciss.CsrToCiss`'s (its values ``width`` bits,
        at least 2: :func:`ciss_width`; its indices ``index_width``).

    ``block_cols`` is at most ``lanes`` (a block's row is one vector in BSR to COO) and
    ``lanes`` at most 16 (CSF to COO's level records).

    Members
    -------
    mode : In(MintMode)
    columns : In(:func:`divisor_bits`)
    fibers : In(P)
    dense, mask, values, pairs, row_ptr, entries, shape, col_ids, dense_shape, records,
    csf0, csf1, csf2 : In(stream(...))
    words, marks, expanded, level0, level1, level2, block_ptr, blocks, col_ptr, csc, rlc,
    tensor, ciss, ciss_count : Out(stream(...))
    bsr_mem, ciss_mem : Out(MemoryPortSignature)
        As :class:`~sparseforge.hw.mint_merged.MintMergedSignature` says: each mode emits
        on the streams its separate converter has, by these names, RLC and BSR to COO on
        ``words`` as Dense to COO does, Dense to RLC on ``rlc``, CSF to COO on ``tensor``.

    Structure: :class:`~.convert_dense.NonzeroPositions`; then either the
    :class:`~.convert_dense.Expander` (ZVC to Dense), or the position
    :class:`~.prefix_sum.PrefixSum` (Kogge-Stone, inclusive, P bits, one adder level a
    cycle) and the :class:`~.divider.DivMod` of L lanes as one pipeline, everything else
    about a vector (values, mask, the nonzeros' sums, flags) waiting :class:`~.stream_units.Beside`
    it in a FIFO (a lane's sum kept modulo L, its top bit rebuilt from the vector's
    first on the way out, so the FIFO holds only bits the compactor reads), then the
    :class:`~.convert_dense.Compactor` or, in Dense-to-CSF mode, :class:`FiberTree`, or
    in CSR-to-BSR mode the banks of :class:`~.convert_bsr.CsrBlocks`, whose tagger feeds
    the pipeline in place of zero detection. In CSR-to-CSC mode the position scan alone
    serves :class:`~.convert_csc.CsrToCsc`'s pointer scan. In Dense-to-RLC mode
    :class:`~.convert_rlc.RunLengths` and :class:`~.convert_rlc.Fillers` feed zero
    detection, whose pairs go straight to the register slice before the compactor. COO
    and CSR to Dense run through :class:`~.convert_expand.CooToDense` (after
    :class:`~.convert_expand.CsrToCoo` for CSR) beside the rest. In BSR-to-COO mode
    :class:`~.convert_bsr.Slicer`'s row slices enter zero detection and go, as Dense to
    RLC's pairs do, past the divider to the compactor. CSF to COO
    (:class:`~.convert_csf.CsfToCoo`) and CSR to CISS (:class:`~.convert_ciss.CsrToCiss`'s
    units) run beside the rest.
    A dense stream's padding
    lanes, those of a row's last vector past ``columns % L``, add nothing to the position.

    Latency and throughput: ``latency`` cycles from a vector that completes a word to
    that word: a Dense-to-X mode's :class:`~.convert_dense.DenseToCoo` latency plus the
    position scan's and the divider's (``scan + ceil(Q / divide_levels)``, ``scan =
    log2 L + 1``); ZVC to Dense takes zero detection's 2 cycles more than
    :class:`~.convert_dense.ZvcToDense`; Dense to CSF's records leave the position scan
    and divider's latency and :class:`FiberTree`'s after a vector is taken, where
    :class:`~.convert_csf.DenseToCsf` counts coordinates instead. One vector a cycle in
    every mode while the outputs are taken: for RLC to COO, L pairs a cycle, where
    :class:`~.convert_rlc.RlcToCoo` with its one divider lane sends one nonzero a cycle.
    CSR to BSR takes one nonzero a cycle, as :class:`~.convert_bsr.CsrToBsr` does, its
    divide the scan's and the divider's latency (its descriptor queue deepened by it;
    a bank holds its rows across that latency). CSR to CSC runs as
    :class:`~.convert_csc.CsrToCsc` does, one nonzero a cycle through scatter and drain.
    Dense to RLC takes the cycles :class:`~.convert_rlc.DenseToRlc` takes, one dense
    vector a cycle: its path is the separate block's; COO and CSR to Dense take the
    separate blocks' cycles, one dense vector a cycle. BSR to COO reads a block a cycle
    (R reads a block) and sends its row's nonzeros in one vector, where
    :class:`~.convert_bsr.BsrToCoo` sends one a cycle: ``R b`` cycles for ``b`` blocks
    where the separate block takes up to ``R b + n``. CSF to COO and CSR to CISS take
    the separate blocks' cycles (a leaf a cycle; an entry a cycle while the rows keep the
    schedule fed).

    Area: the paper's dividers are 74% of its MINT_m (Section VII-B). Here the divider
    is a row's bits deep and a column count wide (``quotient_width`` levels of
    ``index_width + 1``-bit subtracts), where dividing whole positions took
    ``position_width`` levels of registers ``position_width`` bits wide on every lane,
    most of the block's flip-flops. ``MERGES`` and ``DIVIDES`` let the synthesis report
    set it beside the separate converters as built (counters where the paper divides in
    Dense to COO, CSR and CSF, one divider lane in RLC to COO and CSR to BSR; CSR to CSC
    divides nothing) and as the paper builds them, each position-computing converter
    with its own L-lane divider (:data:`DIVIDER`, this one, measured once and added to
    each; RLC to COO's and CSR to BSR's one lane are counted as well, a few percent).

    Clock: the divider's stages are short (a subtract of the divisor's bits and a
    multiplexer). The stall used to set the clock: the compactor's registered offset
    decides whether it takes a vector, and that readiness ran back, unregistered,
    through the register after the FIFO, the FIFO and the divider to the enables of
    every stage of the divider and the position scan (thousands of flip-flops spread
    over the die, mostly routing). That
    register is now the house :class:`~.stream_units.Skid`, its ready registered too, so
    that path starts at a flip-flop. The input side's stall was then the longest: the
    FIFO beside the divider, once full, held ``enter``, and that readiness ran back,
    unregistered, through the nonzeros' prefix sum and zero detection to the input's
    ready and the ``first`` register (mostly routing, on a die the block mostly fills).
    A second :class:`~.stream_units.Skid` (``entry``) before ``enter`` cuts it as the one
    before the compactor cut the other, at a cycle of latency. The critical path then
    lay in :class:`FiberTree` (78.8 MHz): ``fibers - 1`` (a P-bit subtract), its compare
    with ``j``, ``i``'s increment and the lanes' ``(i, j)`` multiplexers, one carry chain
    after another into the marks' registers (some 46 levels, two fifths logic). ``fibers``
    is held while a tensor streams, so ``fibers - 1``, ``i + 1``, ``j + 1`` and whether
    ``j`` is a slice's last fiber are now registers, set as ``(i, j)`` move, and a lane's
    ``(i, j)`` is two multiplexers from them. The synthesis report names the critical path.
    Size: the CSF tree, the BSR units, the CSC sort and the units of Dense to RLC and COO
    to Dense that nothing else uses take the logic (LUT4s and carry cells) past the
    ECP5-25k with the flow's fifth to spare; the report places it on the smallest ECP5
    that holds it. BSR to COO shares zero detection, the prefix sum and the compactor;
    CSF to COO and CSR to CISS, whose units fit nothing here, add their separate blocks'
    logic.
    """

    PARAMS = (LANES, WIDTH, Param("index_width", 16, 1, 32, "bits of a row and a column id"),
              Param("ptr_width", 32, 1, 48, "bits of a CSR row pointer (and of CSF's counts, "
                    "CSR to BSR's columns, pointers and counts)"),
              Param("run_bits", 5, 1, 32, "bits of an RLC run"),
              Param("position_width", 32, 2, 64, "bits of a position"),
              LEVELS,
              Param("divide_levels", 1, 1, 64, "quotient bits between divider registers"),
              Param("quotient_width", 0, 0, 64, "bits of the divider's quotients: rows, "
                    "fibers, block columns (0: index_width)"),
              Param("block_rows", 2, 1, 8, "rows of a BSR block (R)"),
              Param("block_cols", 2, 1, 8, "columns of a BSR block (C), the divisor"),
              Param("depth", 512, 4, 1 << 16, "nonzeros a CSR-to-BSR scratchpad bank holds",
                    pow2=True),
              Param("max_rows", 1024, 2, 1 << 24, "CSR to CSC's most rows", pow2=True),
              Param("max_cols", 1024, 32, 1 << 20, "CSR to CSC's most columns", pow2=True),
              Param("max_nnz", 4096, 2, 1 << 20, "CSR to CSC's most nonzeros (its "
                    "scratchpad's depth)", pow2=True),
              Param("pes", 4, 1, 64, "CSR to CISS's PE rows (lanes of an entry)"),
              Param("addr_width", 20, 2, 32, "bits of CSR to CISS's element indices"),
              Param("inflight", 4, 2, 64, "CSR to CISS's reads in flight per lane"))
    REPORT = ({"lanes": 8, "width": 16, "index_width": 16, "ptr_width": 32},)
    LEAST_DEVICE = "85k"
    """Where the report places it (``--device auto``): the LFE5U-85F. The 45F holds its
    cells, but nextpnr does not route it there."""
    MERGES = ("dense_to_coo", "dense_to_csr", "dense_to_zvc", "rlc_to_coo", "zvc_to_dense",
              "dense_to_csf", "csr_to_bsr", "csr_to_csc", "dense_to_rlc", "coo_to_dense",
              "csr_to_dense", "bsr_to_coo", "csf_to_coo", "csr_to_ciss")
    """The separate converters (MINT_b) it replaces, each at its first report
    configuration; ``synth --report`` prints the ratio."""
    DIVIDES = ("dense_to_coo", "dense_to_csr", "rlc_to_coo", "dense_to_csf", "csr_to_bsr")
    """Those of :attr:`MERGES` that compute positions: built the paper's way, each has
    its own :attr:`DIVIDER`."""
    DIVIDER = ("divmod", {"lanes": 8, "width": 32, "quotient_width": 16, "divisor_width": 17,
                          "levels": 1})
    """The divider of the report configuration, as a block and its parameters."""
    MERGES_PAPER = ("MINT_m 0.41 mm2 = 43% of MINT_b's 0.95 (-57%, Sec. VII, 28 nm, all of "
                    "Fig. 8's conversions; its dividers are 74% of MINT_m)")

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.lanes, self.width, self.index_width = v["lanes"], v["width"], v["index_width"]
        self.ptr_width, self.levels = v["ptr_width"], v["levels"]
        self.run_bits, self.position_width = v["run_bits"], v["position_width"]
        self.divide_levels, self.depth = v["divide_levels"], v["depth"]
        self.block = (v["block_rows"], v["block_cols"])
        if self.block[1] >> self.position_width:
            raise ParameterError(f"block_cols={self.block[1]} does not fit the "
                                 f"{self.position_width}-bit divisor (position_width)")
        if self.run_bits > self.index_width:
            raise ParameterError(f"run_bits={self.run_bits} does not fit the "
                                 f"{self.index_width}-bit column of a record (index_width)")
        L, P, B = self.lanes, self.position_width, self.run_bits
        if self.block[1] > L:
            raise ParameterError(f"block_cols={self.block[1]} exceeds lanes={L}: BSR to COO "
                                 "sends a block's row as one vector")
        if L > 16:
            raise ParameterError(f"lanes={L}: CSF to COO's level records hold at most 16")
        self.pes, self.addr_width, self.inflight = v["pes"], v["addr_width"], v["inflight"]
        self.record = struct(wire.coo_entry(self.index_width, self.width))
        # BSR to COO's walker and slicer; CSF to COO's tree walk; CSR to CISS's rows.
        self.walker = SliceWalker(self.block[0], self.ptr_width)
        self.slice_tags = Queue(slice_tag_layout(self.block[0], self.ptr_width), depth=TAGS,
                                latency=1)
        self.slicer = Slicer(self.block, self.ptr_width, self.width)
        # Its leaves' data as wide as the counts too: a level's end rides in a leaf's
        # data, and a narrower one would leave the top bits of ``csf2``'s total unread (a
        # lint warning); the values' extra bits are constant zeros, which synthesis drops.
        self.tree_walk = CsfToCoo(lanes=L, index_width=self.index_width,
                                  count_width=self.ptr_width,
                                  value_width=max(self.width, self.ptr_width))
        self.slice_lengths = SliceLengths(self.index_width, self.addr_width)
        self.runs = RunLengths(L, B, P, self.width, self.levels)
        self.events = Queue(event_layout(L, B, P, self.width), depth=QUEUE, latency=2)
        self.fillers = Fillers(L, B, P, self.width)
        self.marker = EndMarker(data.ArrayLayout(B + self.width, L))
        self.encoded = Skid(rlc_vector_layout(L, B, self.width))
        # (at least their narrowest widths: the positions and pointers fit them)
        self.linear = CooToDense(lanes=L, width=max(P, WIDE.lo), value_width=self.width)
        self.csr_rows = CsrToCoo(width=max(self.ptr_width, WIDE.lo), value_width=self.width)
        # A lane's distance (or a pair's run), or in BSR to COO mode the row slice's row
        # and columns.
        slice_ = data.StructLayout({"row": self.index_width,
                                    "cols": data.ArrayLayout(self.index_width, self.block[1])})
        tag = data.StructLayout({"per": data.UnionLayout({
            "counts": data.ArrayLayout(self.run_bits + 1, L), "slice": slice_}), "row_end": 1})
        self.nonzeros = NonzeroPositions(L, self.width, tag, self.levels)
        self.scan = PrefixSum(lanes=L, width=P, variant="kogge_stone", inclusive=1)
        self.quotient_width = min(v["quotient_width"] or self.index_width, P)
        self.divider = DivMod(lanes=L, width=P, quotient_width=self.quotient_width,
                              divisor_width=divisor_bits(self.index_width, self.block[1], P),
                              levels=self.divide_levels)
        position = position_bits(L)
        side = data.StructLayout({
            "values": data.ArrayLayout(self.width, L), "mask": L, "base": position,
            "low": data.ArrayLayout(position - 1, L - 1), "total": position, "last": 1,
            "mark": 1, "row": range(self.block[0])})
        self.beside = Beside(prefix_sum_layouts(L, P)[0], divmod_layout(L, P), side,
                             self.scan.latency + self.divider.latency)
        self.compactor = Compactor(L, self.record.size, self.levels, L, self.ptr_width)
        self.expander = Expander(L, self.width)
        self.tree = FiberTree(L, self.index_width, self.ptr_width, self.width, P)
        self.cut = Skid(data.StructLayout({
            "records": data.ArrayLayout(self.record, L),
            "sums": data.ArrayLayout(position, L), "mask": L, "total": position, "last": 1,
            "mark": 1, "block_col": min(P, self.ptr_width),
            "within": range(self.block[1]), "row": range(self.block[0])}))
        self.entry = Skid(data.StructLayout({"data": prefix_sum_layouts(L, P)[0],
                                             "side": side}))
        self.blocks_unit = CsrBlocks(self.block, self.ptr_width, self.width, self.depth,
                                     self.entry.latency + self.beside.latency + 1)
        self.sorter = CsrToCsc(shared_scan=True, lanes=L, max_rows=v["max_rows"],
                            max_cols=v["max_cols"], max_nnz=v["max_nnz"], value_width=self.width)
        for name, most in (("position_width", P), ("ptr_width", self.ptr_width)):
            if self.sorter.ptr_width > most:
                raise ParameterError(f"max_nnz={v['max_nnz']} needs {self.sorter.ptr_width}-"
                                     f"bit pointers, wider than {name}={most}")
        self.latency = (self.nonzeros.latency + self.entry.latency + self.beside.latency + 1
                        + self.compactor.latency)
        super().__init__(MintMergedSignature(L, self.width, self.index_width, self.ptr_width,
                                             self.run_bits, P, self.block,
                                             (v["max_rows"], v["max_cols"], v["max_nnz"]),
                                             (self.pes, self.addr_width)))

    def elaborate(self, platform):
        m = Module()
        for name in ("runs", "events", "fillers", "marker", "encoded", "nonzeros", "entry",
                     "scan", "divider", "beside", "cut", "compactor", "expander", "linear",
                     "csr_rows", "tree", "blocks_unit", "sorter", "walker", "slice_tags",
                     "slicer", "tree_walk", "slice_lengths"):
            m.submodules[name] = getattr(self, name)
        self._vectors(m)
        self._positions(m)
        self._outputs(m)
        return m

    def _vectors(self, m):
        """In: a dense vector, an RLC vector, a mask word one bit a lane or, in Dense to
        RLC mode, a vector of pairs from :class:`~.convert_rlc.Fillers`, each lane's
        distance from the element before it (a pair's run) beside; in BSR to COO mode a
        block's row slice from :class:`~.convert_bsr.Slicer`, its row and columns
        beside (lanes past C zero)."""
        L, mode, given = self.lanes, self.mode, self.nonzeros.vectors
        expand, rlc = mode == MintMode.ZVC_TO_DENSE, mode == MintMode.RLC_TO_COO
        encode, unblock = mode == MintMode.DENSE_TO_RLC, mode == MintMode.BSR_TO_COO
        slices = self.slicer.slices
        items = slices.payload.item.items
        from_dense = mode.matches(MintMode.DENSE_TO_COO, MintMode.DENSE_TO_CSR,
                                  MintMode.DENSE_TO_ZVC, MintMode.DENSE_TO_CSF)
        dense, mask, pairs = self.dense, self.mask, self.pairs
        # Dense to RLC: the runs and fillers first, their pairs then through zero detection.
        runs, filled = self.runs.dense, self.fillers.vectors
        wiring.connect(m, self.runs.events, self.events.i)
        wiring.connect(m, self.events.o, self.fillers.events)
        m.d.comb += [runs.valid.eq(dense.valid & encode),
                     runs.payload.lanes.eq(dense.payload.lanes),
                     runs.payload.last.eq(dense.payload.last),
                     filled.ready.eq(given.ready & encode)]
        m.d.comb += [
            given.valid.eq(Mux(unblock, slices.valid, Mux(expand, mask.valid, Mux(
                rlc, pairs.valid, Mux(encode, filled.valid, dense.valid & from_dense))))),
            dense.ready.eq(Mux(encode, runs.ready, given.ready & from_dense)),
            mask.ready.eq(given.ready & expand), pairs.ready.eq(given.ready & rlc),
            slices.ready.eq(given.ready & unblock),
            given.payload.last.eq(Mux(unblock, slices.payload.end, Mux(
                expand, mask.payload.last, Mux(rlc, pairs.payload.last, Mux(
                    encode, filled.payload.last, dense.payload.last))))),
            given.payload.tag.row_end.eq(dense.payload.row_end),
        ]
        beside = given.payload.tag.per.slice
        with m.If(unblock):
            m.d.comb += beside.row.eq(items[0].row)
            m.d.comb += [col.eq(item.col) for col, item in zip(beside.cols, items, strict=True)]
        first = Signal(init=1)                      # the next vector starts a matrix
        with m.If(given.valid & given.ready):
            m.d.sync += first.eq(given.payload.last)
        # A row's last vector holds ``columns % L`` elements (L where that is 0).
        spare = self.columns[:exact_log2(L)]
        padded = dense.payload.row_end & spare.any()
        B = self.run_bits
        for i in range(L):
            pair = pairs.payload.pairs[i]
            # Lane 0 follows the element before it, but for a matrix's first.
            real = ~padded | (i < spare) if i < L - 1 else ~padded
            step = Mux(rlc, 1, real) if i else ~first
            distance = Signal(B + 1, name=f"distance{i}")
            # A filler's value is 0: it enters as 1 (a pair is there), its run's top bit set.
            run, value = filled.payload.tag[i][:B], filled.payload.tag[i][B:]
            held = Signal(name=f"held{i}")
            # (the end marker's items are whatever the memory last answered)
            block_value = Mux(slices.payload.end, 0, items[i].value) if i < self.block[1] else 0
            m.d.comb += [held.eq(value.any()),
                         distance.eq(Mux(encode, Cat(run, ~held), Mux(rlc, pair.run + step, step))),
                         given.payload.values[i].eq(Mux(unblock, block_value, Mux(
                             expand, mask.payload.mask[i], Mux(rlc, pair.value, Mux(
                                 encode, Mux(held, value, filled.payload.values[i]),
                                 dense.payload.lanes[i])))))]
            with m.If(~unblock):
                m.d.comb += given.payload.tag.per.counts[i].eq(distance)

    def _positions(self, m):
        """Each element's position, divided by ``columns``, the vector waiting beside; the
        positions of ZVC to Dense go to the expander instead. In CSR-to-BSR mode a tagged
        nonzero enters instead, its column lane 0's count (the scan gives it back as its
        position) to be divided by C. Dense to RLC's pairs and BSR to COO's row slices go
        to the compactor's register slice instead (:meth:`_outputs`)."""
        L, mode = self.lanes, self.mode
        expand, bsr = mode == MintMode.ZVC_TO_DENSE, mode == MintMode.CSR_TO_BSR
        direct = mode.matches(MintMode.DENSE_TO_RLC, MintMode.BSR_TO_COO)
        found, enter, expander = self.nonzeros.positions, self.entry.i, self.expander
        wiring.connect(m, self.entry.o, self.beside.enter)
        tagged = self.blocks_unit.tagged
        m.d.comb += [
            enter.valid.eq(Mux(bsr, tagged.valid, found.valid & ~expand & ~direct)),
            tagged.ready.eq(enter.ready & bsr),
            expander.vectors.valid.eq(found.valid & expand),
            found.ready.eq(Mux(expand, expander.vectors.ready,
                               Mux(direct, self.cut.i.ready, enter.ready & ~bsr))),
        ]
        given, side = found.payload, enter.payload.side
        for target in (side, expander.vectors.payload):
            m.d.comb += [target.mask.eq(given.mask), target.total.eq(given.total),
                         target.last.eq(given.last)]
        m.d.comb += [expander.vectors.payload.sums.eq(given.sums), side.base.eq(given.sums[0])]
        m.d.comb += [side.low[i - 1].eq(given.sums[i]) for i in range(1, L)]
        csr_mark = (mode == MintMode.DENSE_TO_CSR) & (given.tag.row_end | given.last)
        # Each chosen in a signal of its own: a port partly computed and partly passed
        # through would leave bits unread in the Verilog.
        value, ends = Signal(self.width), Signal()
        widths = [max(self.ptr_width, self.run_bits + 1), *[self.run_bits + 1] * (L - 1)]
        counts = [Signal(w, name=f"count{i}") for i, w in enumerate(widths)]
        m.d.comb += [value.eq(Mux(bsr, tagged.payload.value, given.values[0])),
                     ends.eq(given.last | bsr),
                     side.values.eq(Cat(value, *given.values[1:])),
                     side.mark.eq(csr_mark | (mode == MintMode.DENSE_TO_ZVC)),
                     enter.payload.data.last.eq(ends), side.row.eq(tagged.payload.row)]
        m.d.comb += [count.eq(Mux(bsr, tagged.payload.col if i == 0 else 0,
                                  given.tag.per.counts[i])) for i, count in enumerate(counts)]
        m.d.comb += [enter.payload.data.counts[i].eq(count) for i, count in enumerate(counts)]

        # The position scan and the divider, one pipeline between the FIFO's ends; in CSR
        # to CSC mode the scan alone, for the column pointers.
        scan, divider, beside = self.scan, self.divider, self.beside
        sums, dividends = scan.sums, divider.dividends
        csc = mode.matches(MintMode.CSR_TO_CSC, MintMode.COO_TO_CSC)
        self._scan_input(m, csc)
        m.d.comb += [dividends.valid.eq(sums.valid & ~csc),
                     sums.ready.eq(Mux(csc, self.sorter.scan_sums.ready, dividends.ready)),
                     divider.divisor.eq(Mux(bsr, self.block[1], self.columns))]
        m.d.comb += [dividends.payload[i].eq(sums.payload.sums[i]) for i in range(L)]
        wiring.connect(m, divider.results, beside.from_pipe)
        pointers = self.sorter.scan_sums
        m.d.comb += [pointers.valid.eq(sums.valid & csc),
                     pointers.payload.total.eq(sums.payload.total),
                     pointers.payload.last.eq(sums.payload.last)]
        m.d.comb += [pointers.payload.sums[i].eq(sums.payload.sums[i]) for i in range(L)]

    def _scan_input(self, m, csc):
        """The position scan's input: the vectors waiting beside the divider, or in CSR to
        CSC mode the counter words. The scan is inclusive and the pointers exclusive sums,
        so a word enters moved up a lane, the word before's last count in lane 0 (0 at a
        matrix's first): its inclusive sums are the word's exclusive ones."""
        L, given, words = self.lanes, self.beside.to_pipe, self.sorter.scan_counts
        into = self.scan.counts
        carry = Signal(self.sorter.ptr_width)              # the word before's last count
        with m.If(words.valid & words.ready):
            m.d.sync += carry.eq(Mux(words.payload.last, 0, words.payload.counts[L - 1]))
        moved = [carry, *words.payload.counts[:L - 1]]
        # chosen in signals of their own (a port partly computed and partly passed
        # through would leave bits unread in the Verilog)
        counts = [Signal(self.position_width, name=f"scan_count{i}") for i in range(L)]
        last = Signal()
        m.d.comb += [into.valid.eq(Mux(csc, words.valid, given.valid)),
                     given.ready.eq(into.ready & ~csc), words.ready.eq(into.ready & csc),
                     last.eq(Mux(csc, words.payload.last, given.payload.last)),
                     into.payload.last.eq(last)]
        m.d.comb += [count.eq(Mux(csc, word, given.payload.counts[i]))
                     for i, (count, word) in enumerate(zip(counts, moved, strict=True))]
        m.d.comb += [into.payload.counts[i].eq(count) for i, count in enumerate(counts)]

    def _outputs(self, m):
        """Out: the records to the compactor, its words and marks (in Dense to RLC mode the
        pairs, straight from zero detection, and their words to the
        :class:`~.convert_rlc.EndMarker`; in BSR to COO mode a row slice's nonzeros,
        straight from zero detection too); the expander's vectors."""
        leave, vectors = self.beside.leave, self.compactor.vectors
        side, encode = leave.payload.side, self.mode == MintMode.DENSE_TO_RLC
        unblock = self.mode == MintMode.BSR_TO_COO
        direct = encode | unblock               # straight from zero detection to the slice
        found = self.nonzeros.positions.payload
        B = self.run_bits
        # A lane's sum is less than L past the vector's first: its top bit is the first's,
        # flipped where its low bits wrapped below the first's.
        k = exact_log2(self.lanes)
        base = side.base
        tops = [Signal(name=f"top{i}") for i in range(1, self.lanes)]
        m.d.comb += [top.eq(base[k] ^ (low < base[:k]))
                     for top, low in zip(tops, side.low, strict=True)]
        sums = [Mux(direct, found.sums[i], sum_) for i, sum_ in enumerate(
            [base, *(Cat(low, top) for low, top in zip(side.low, tops, strict=True))])]
        records, block = [], found.tag.per.slice        # a row slice's row and columns
        for i in range(self.lanes):
            record, at = Signal(self.record, name=f"record{i}"), leave.payload.data[i]
            count = found.tag.per.counts[i]                 # a pair's run and filler bit
            col = block.cols[i] if i < self.block[1] else 0
            m.d.comb += [record.row.eq(Mux(encode, count[B], Mux(unblock, block.row,
                                                                 at.quotient))),
                         record.col.eq(Mux(encode, count[:B], Mux(unblock, col, at.remainder))),
                         record.value.eq(Mux(direct, found.values[i], side.values[i]))]
            records.append(record)
        # A register slice between the FIFO's block RAM and the compaction network or, in
        # Dense to CSF mode, the tree construction, or in CSR to BSR mode the banks: its
        # payload and its ready registered, so neither the network nor the stall that
        # runs back from it shares a cycle with the FIFO and the divider's enables.
        tree, csf = self.tree, self.mode == MintMode.DENSE_TO_CSF
        divided, bsr = self.blocks_unit.divided, self.mode == MintMode.CSR_TO_BSR
        cut, first = self.cut, leave.payload.data[0]
        into_cut = cut.i.payload
        m.d.comb += [cut.i.valid.eq(Mux(direct, self.nonzeros.positions.valid, leave.valid)),
                     leave.ready.eq(cut.i.ready & ~direct),
                     into_cut.mask.eq(Mux(direct, found.mask, side.mask)),
                     into_cut.total.eq(Mux(direct, found.total, side.total)),
                     into_cut.last.eq(Mux(direct, found.last, side.last)),
                     into_cut.mark.eq(side.mark & ~direct),
                     into_cut.block_col.eq(first.quotient), into_cut.within.eq(first.remainder),
                     into_cut.row.eq(side.row)]
        m.d.comb += [into_cut.records[i].eq(r) for i, r in enumerate(records)]
        m.d.comb += [into_cut.sums[i].eq(v) for i, v in enumerate(sums)]
        held_out = cut.o
        m.d.comb += [vectors.valid.eq(held_out.valid & ~csf & ~bsr),
                     tree.vectors.valid.eq(held_out.valid & csf),
                     divided.valid.eq(held_out.valid & bsr),
                     held_out.ready.eq(Mux(csf, tree.vectors.ready,
                                           Mux(bsr, divided.ready, vectors.ready)))]
        held = held_out.payload
        m.d.comb += [divided.payload.block_col.eq(held.block_col),
                     divided.payload.col.eq(held.within), divided.payload.row.eq(held.row),
                     divided.payload.value.eq(held.records[0].value)]
        given = vectors.payload
        m.d.comb += [given.records.eq(held.records), given.sums.eq(held.sums),
                     given.mask.eq(held.mask), given.total.eq(held.total),
                     given.last.eq(held.last), given.mark.eq(held.mark),
                     given.tag.eq(held.mask)]
        into = tree.vectors.payload
        m.d.comb += [into.cols[i].eq(r.col) for i, r in enumerate(held.records)]
        m.d.comb += [into.values[i].eq(r.value) for i, r in enumerate(held.records)]
        m.d.comb += [into.sums.eq(held.sums), into.mask.eq(held.mask),
                     into.total.eq(held.total), into.last.eq(held.last),
                     tree.fibers.eq(self.fibers)]
        for n in range(MODES):
            wiring.connect(m, getattr(tree, f"level{n}"),
                           wiring.flipped(getattr(self, f"level{n}")))

        words, marks = self.compactor.words, self.compactor.marks
        m.d.comb += [
            self.words.valid.eq(words.valid & ~encode),
            words.ready.eq(Mux(encode, self.marker.given.ready, self.words.ready)),
            self.words.payload.eq(words.payload),
            self.marks.valid.eq(marks.valid), marks.ready.eq(self.marks.ready),
            self.marks.payload.ptr.eq(marks.payload.position),
            self.marks.payload.mask.eq(marks.payload.tag),
            self.marks.payload.last.eq(marks.payload.last),
        ]
        self._rlc_pairs(m, encode)
        wiring.connect(m, wiring.flipped(self.values), self.expander.values)
        units = self.blocks_unit
        for name in ("row_ptr", "entries"):
            given, into = getattr(self, name), getattr(units, name)
            m.d.comb += [into.valid.eq(given.valid & bsr), given.ready.eq(into.ready & bsr),
                         into.payload.eq(given.payload)]
        for name in ("block_ptr", "blocks"):
            wiring.connect(m, getattr(units, name), wiring.flipped(getattr(self, name)))
        first = self._csc_streams(m)
        self._to_dense(m)       # it takes row_ptr and entries from CSR to BSR's ready
        self._walks(m, first)   # and these in their modes, after it

    def _rlc_pairs(self, m, encode):
        """Dense to RLC's words to pairs, as :class:`~.convert_rlc.DenseToRlc` makes them:
        a word's lanes past its count (0, 0), a filler's value 0, an empty word only ending
        the matrix, ``last`` on the final pair vector."""
        words, given, B = self.compactor.words, self.marker.given, self.run_bits
        count = words.payload.count
        m.d.comb += [given.valid.eq(words.valid & encode), given.payload.keep.eq(count != 0),
                     given.payload.end.eq(words.payload.last)]
        for i, lane in enumerate(words.payload.lanes):
            record = self.record(lane)
            pair = Cat(record.col[:B], Mux(record.row[0], 0, record.value))
            m.d.comb += given.payload.item[i].eq(Mux(count >= i + 1, pair, 0))
        taken, out = self.marker.taken, self.encoded.i
        m.d.comb += [out.valid.eq(taken.valid), taken.ready.eq(out.ready),
                     out.payload.pairs.eq(taken.payload.item),
                     out.payload.last.eq(taken.payload.last)]
        wiring.connect(m, self.encoded.o, wiring.flipped(self.rlc))

    def _to_dense(self, m):
        """COO and CSR to Dense: one :class:`~.convert_expand.CooToDense` takes the records
        on ``records`` or from :class:`~.convert_expand.CsrToCoo` (the CSR on ``row_ptr``
        and ``entries``); its vectors and ZVC to Dense's leave on ``expanded``."""
        mode, linear, rows = self.mode, self.linear, self.csr_rows
        coo, csr = mode == MintMode.COO_TO_DENSE, mode == MintMode.CSR_TO_DENSE
        m.d.comb += [linear.shape.valid.eq(self.dense_shape.valid & (coo | csr)),
                     self.dense_shape.ready.eq(linear.shape.ready & (coo | csr))]
        m.d.comb += [linear.shape.payload[name].eq(self.dense_shape.payload[name])
                     for name in ("rows", "cols", "nnz")]
        given, made, into = self.records, rows.records, linear.records
        to_csc = (mode == MintMode.COO_TO_CSC) & self.sorter.coo.ready
        m.d.comb += [into.valid.eq(Mux(coo, given.valid, made.valid & csr)),
                     given.ready.eq(Mux(coo, into.ready, to_csc)),
                     made.ready.eq(into.ready & csr)]
        for name in ("row", "col", "value", "last"):
            m.d.comb += into.payload[name].eq(Mux(coo, given.payload[name], made.payload[name]))
        pointer, entry = self.row_ptr, self.entries
        m.d.comb += [rows.row_ptr.valid.eq(pointer.valid & csr),
                     rows.row_ptr.payload.ptr.eq(pointer.payload.ptr),
                     rows.row_ptr.payload.last.eq(pointer.payload.last),
                     rows.entries.valid.eq(entry.valid & csr),
                     rows.entries.payload.col.eq(entry.payload.col),
                     rows.entries.payload.value.eq(entry.payload.value)]
        with m.If(csr):
            m.d.comb += [pointer.ready.eq(rows.row_ptr.ready),
                         entry.ready.eq(rows.entries.ready)]
        zvc, filled, out = self.expander.dense, linear.dense, self.expanded
        fill = coo | csr
        m.d.comb += [out.valid.eq(Mux(fill, filled.valid, zvc.valid)),
                     filled.ready.eq(out.ready & fill), zvc.ready.eq(out.ready & ~fill),
                     out.payload.eq(Mux(fill, filled.payload, zvc.payload))]

    def _csc_streams(self, m):
        """CSR and COO to CSC's streams: ``shape`` and ``col_ids`` in, the CSR's ``row_ptr``
        (its first pointer dropped) and ``entries`` shared with CSR to BSR, or the COO's
        ``records`` (COO to Dense's, its ``ready`` driven there), the pointers and entries
        out."""
        sorter, from_csr = self.sorter, self.mode == MintMode.CSR_TO_CSC
        csc = self.mode.matches(MintMode.CSR_TO_CSC, MintMode.COO_TO_CSC)
        from_coo = self.mode == MintMode.COO_TO_CSC
        records = self.records.payload
        m.d.comb += [sorter.from_coo.eq(from_coo),
                     sorter.coo.valid.eq(self.records.valid & from_coo)]
        m.d.comb += [sorter.coo.payload[name].eq(records[name])
                     for name in ("row", "col", "value", "last")]
        for name in ("shape", "col_ids"):
            given, into = getattr(self, name), getattr(sorter, name)
            m.d.comb += [into.valid.eq(given.valid & csc), given.ready.eq(into.ready & csc),
                         into.payload.eq(given.payload)]
        pointer, entry = self.row_ptr, self.entries
        first = Signal(init=1)                          # the next pointer is a matrix's 0
        dropping = from_csr | (self.mode == MintMode.CSR_TO_CISS)
        with m.If(pointer.valid & pointer.ready & dropping):
            m.d.sync += first.eq(pointer.payload.last)
        m.d.comb += [sorter.row_ptr.valid.eq(pointer.valid & from_csr & ~first),
                     sorter.row_ptr.payload.eq(pointer.payload.ptr),
                     sorter.csr.valid.eq(entry.valid & from_csr),
                     sorter.csr.payload.col.eq(entry.payload.col),
                     sorter.csr.payload.value.eq(entry.payload.value)]
        with m.If(from_csr):
            m.d.comb += [pointer.ready.eq(first | sorter.row_ptr.ready),
                         entry.ready.eq(sorter.csr.ready)]
        for name in ("col_ptr", "csc"):
            wiring.connect(m, getattr(sorter, name), wiring.flipped(getattr(self, name)))
        return first

    def _walks(self, m, first):
        """The conversions that walk a format by its pointers, each on the units of its
        separate block: BSR to COO's block-row pointers on ``row_ptr`` to the
        :class:`~.convert_bsr.SliceWalker`, its reads on ``bsr_mem`` and their tags
        through a queue to the :class:`~.convert_bsr.Slicer` (whose row slices
        :meth:`_vectors` takes); CSF to COO's levels on ``csf0`` .. ``csf2`` through
        :class:`~.convert_csf.CsfToCoo`'s serializers and tree walk to ``tensor``; CSR to
        CISS's rows (``dense_shape``'s ``rows``) and its row pointers on ``row_ptr``
        (``first`` is set where the next is a matrix's 0, which is dropped) through
        :class:`~.convert_ciss.SliceLengths` to the schedule, lanes and join of
        :class:`~.convert_ciss.CsrToCiss` (wired by that module's own
        ``_schedule_and_fetch``, which both its converters share, so the wiring is not
        written twice). The mode gates their inputs; nothing else drives their
        outputs."""
        mode, pointer = self.mode, self.row_ptr
        unblock = mode == MintMode.BSR_TO_COO
        walker, tags, slicer = self.walker, self.slice_tags, self.slicer
        m.d.comb += [walker.block_ptr.valid.eq(pointer.valid & unblock),
                     walker.block_ptr.payload.eq(pointer.payload)]
        with m.If(unblock):
            m.d.comb += pointer.ready.eq(walker.block_ptr.ready)
        wiring.connect(m, walker.request, wiring.flipped(self.bsr_mem.request))
        wiring.connect(m, walker.tags, tags.i)
        wiring.connect(m, tags.o, slicer.tags)
        wiring.connect(m, wiring.flipped(self.bsr_mem.response), slicer.response)

        unfold = mode == MintMode.CSF_TO_COO
        for n in range(MODES):
            given, into = getattr(self, f"csf{n}"), getattr(self.tree_walk, f"level{n}")
            m.d.comb += [into.valid.eq(given.valid & unfold), given.ready.eq(into.ready & unfold)]
            m.d.comb += [into.payload[name].eq(given.payload[name])
                         for name in ("mask", "last", "total")]
            for lane, held in zip(into.payload.lanes, given.payload.lanes, strict=True):
                m.d.comb += [lane.id.eq(held.id), lane.data.eq(held.data)]
        records, out = self.tree_walk.records, self.tensor
        m.d.comb += [out.valid.eq(records.valid), records.ready.eq(out.ready)]
        m.d.comb += [out.payload[name].eq(records.payload[name])
                     for name in ("i", "j", "k", "value", "last")]

        ciss, lengths = mode == MintMode.CSR_TO_CISS, self.slice_lengths
        shape = self.dense_shape
        rows = stream.Signature(self.index_width).create(path=("ciss_rows",))
        m.d.comb += [rows.valid.eq(shape.valid & ciss), rows.payload.eq(shape.payload.rows),
                     lengths.row_ptr.valid.eq(pointer.valid & ciss & ~first),
                     lengths.row_ptr.payload.eq(pointer.payload.ptr),
                     lengths.rows.eq(rows.payload)]
        with m.If(ciss):
            m.d.comb += [shape.ready.eq(rows.ready),
                         pointer.ready.eq(first | lengths.row_ptr.ready)]
        held = SimpleNamespace(pes=self.pes, iw=self.index_width, dw=ciss_width(self.width),
                               addr_width=self.addr_width, inflight=self.inflight,
                               mem=self.ciss_mem, ciss=self.ciss, count=self.ciss_count)
        _schedule_and_fetch(m, held, lengths, rows)
