"""The shared vocabulary: the named interfaces that more than one block speaks.

What belongs here is what crosses from one block to another: the Buffet and
Tailor ports (split into the parent's side and the child's), the memory ports,
and the record streams one block sends and another takes (the Eureka rows and
slots, the CISS lanes the TLU sends and the PEs take, the Tensaurus chunks and
drains, the MINT dense vectors and record words), with the payload layouts of
each. A signature only one block uses lives beside that block instead, as a
module-level class just above the component (``prefix_sum.PrefixSumSignature``,
``tensaurus_pe.TensaurusPeSignature``), the way Amaranth keeps
``ReadPort.Signature`` beside ``ReadPort``; so does a layout only it packs.
``tests/test_architecture.py`` checks that each name here is used by two or
more modules of ``hw/`` (directly or through another name here).

Each is a ``wiring.Signature`` (class) whose docstring states the protocol
it promises; payload layouts come from the wire formats in
:mod:`sparseforge.sw.wire`, so host encoders and testbenches pack the same
bits. Members are named from the serving block's point of view: a block
declares the signature itself as its own (``super().__init__(BuffetSignature(...))``),
a client that drives it declares ``In(BuffetChildSignature(...))`` (the flip), a
wrapper that passes it through declares ``Out(BuffetSignature(...))``, and a
composite joins two with ``wiring.connect``.

Every stream member is an ``amaranth.lib.stream`` stream: a transfer happens
on a cycle where ``valid`` and ``ready`` are both high; a source holds
``valid`` and its payload until the transfer.
"""

from amaranth.hdl import signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..sw import wire


def struct(fields):
    """The ``StructLayout`` of a record of :class:`~sparseforge.sw.wire.Field` s."""
    return data.StructLayout({f.name: f.width for f in fields})


def _count(depth):
    return ceil_log2(depth + 1)


class BuffetParentSignature(wiring.Signature):
    """A buffet's parent side, seen from the buffer: the producer fills it and gets credits.

    - ``fill`` (stream in, ``width`` bits): appends the payload at the tail;
      ``ready`` is low while the buffer is full.
    - ``credit`` (out): the count freed by the shrink accepted on the previous
      cycle, else 0. A parent that starts with ``depth`` credits and spends
      one per fill never overruns the buffer.
    """

    def __init__(self, depth, width):
        super().__init__({"fill": In(stream.Signature(width)), "credit": Out(_count(depth))})


class BuffetChildSignature(wiring.Signature):
    """A buffet's child side, seen from the buffer: the consumer reads and frees.

    ``index`` is the width of read indices (default: enough for ``depth``
    elements).

    - ``read`` (stream in): asks for the element ``index`` places from the
      head; ``ready`` stays low until that element is present, so a read never
      returns stale data.
    - ``read_data`` (stream out, ``width`` bits): one response per accepted
      read, in request order; the child may hold ``ready`` low, which stalls
      ``read``.
    - ``shrink`` (stream in): frees ``count`` elements from the head; ``ready``
      is low while that many may not be freed.
    - ``occupancy`` (out): the elements held.
    """

    def __init__(self, depth, width, index=None):
        index = ceil_log2(depth) if index is None else index
        super().__init__({
            "read": In(stream.Signature(index)),
            "read_data": Out(stream.Signature(width)),
            "shrink": In(stream.Signature(_count(depth))),
            "occupancy": Out(_count(depth)),
        })


def _update(depth, width, index):
    """The ``update`` member: a stream of ``{index, data}``."""
    index = ceil_log2(depth) if index is None else index
    return In(stream.Signature(struct(wire.buffet_update(index, width))))


class BuffetSignature(wiring.Signature):
    """A buffet's port, seen from the buffer: ``depth`` elements of ``width`` bits.

    Split by who drives it (Tailors §3.2: the parent fills, the child reads,
    updates and shrinks; credits flow back to the parent), so a composite
    joins the buffer to its producer and to its consumer with one
    ``wiring.connect`` each:

    - ``parent`` (:class:`BuffetParentSignature`): ``fill``, ``credit``.
    - ``child`` (:class:`BuffetChildSignature`, indices of ``index`` bits):
      ``read``, ``read_data``, ``shrink``, ``occupancy``.
    - ``update`` (stream in, ``{index, data}``): the child's write back;
      overwrites an element already filled, ``ready`` low until it is. A
      member of its own, so that a child that only reads (the SpMV MAC) joins
      ``child`` alone, with no port it would leave unused.

    Exported port names carry the side: ``parent__fill__payload``,
    ``child__read_data__valid``, ``child__occupancy``, ``update__payload``.
    """

    def __init__(self, depth, width, index=None):
        super().__init__({"parent": Out(BuffetParentSignature(depth, width)),
                          "child": Out(BuffetChildSignature(depth, width, index)),
                          "update": _update(depth, width, index)})


class TailorParentSignature(wiring.Signature):
    """A Tailor's parent side: the buffet's, and the FIFO region's.

    - ``fill``, ``credit``: as :class:`BuffetParentSignature` says.
    - ``owfill`` (stream in, ``{data, last}``): the overwriting fill that
      streams a tile's bumped elements, once per pass, ``last`` on the tile's
      last index; ``ready`` while the buffer is full or backfilling.
    - ``fifo_credits`` (out, ``0..fifo``): how many ``owfill`` the parent may
      send now without overwriting an element the reader has not passed
      (counting its own in flight against it). The buffer does not enforce it.
    """

    def __init__(self, depth, width, fifo):
        super().__init__({
            **BuffetParentSignature(depth, width).members,
            "owfill": In(stream.Signature(struct(wire.tailor_owfill(width)))),
            "fifo_credits": Out(range(fifo + 1)),
        })


class TailorSignature(wiring.Signature):
    """A Tailor's port: a :class:`TailorParentSignature` ``parent``, and the buffet's
    ``child`` (:class:`BuffetChildSignature`) and ``update``, their indices wide enough
    for ``tile``."""

    def __init__(self, depth, width, fifo, tile):
        index = ceil_log2(tile)
        super().__init__({"parent": Out(TailorParentSignature(depth, width, fifo)),
                          "child": Out(BuffetChildSignature(depth, width, index)),
                          "update": _update(depth, width, index)})


class MemoryWritePortSignature(wiring.Signature):
    """A write port on a parent's memory, seen from the block that writes through it.

    - ``request`` (stream out, ``{addr, data}``): posted writes, one word of
      ``data_width`` bits at ``addr`` each. The memory performs them in the order it
      takes them, so a later write of an address wins; once taken, a write is the
      memory's, and any read the memory answers after it sees it.

    No response stream: a writer here never needs to know a write has landed (it does not
    read back what it writes), so its work ends with its last write taken. The AXI4
    master that maps this port onto a write channel (AW/W, one ID, so in order) counts
    its B responses before it raises the accelerator's done.
    """

    def __init__(self, addr_width, data_width):
        super().__init__({
            "request": Out(stream.Signature(data.StructLayout({"addr": addr_width,
                                                               "data": data_width}))),
        })


# -- Eureka (Sections 3-3.3) ---------------------------------------------------------

EUREKA_COLUMNS = 4
"""Input columns of one 4x4 sub-array: the MAC columns it multiplies at once."""


def slot_layout(fmt):
    """One slot word of a :class:`~sparseforge.sw.wire.EurekaWire`: a lane {value, column,
    displaced} per MAC row, MAC row 0 in the low bits."""
    return data.ArrayLayout(struct(fmt.lane), fmt.lanes)


def beat_layout(fmt):
    """One beat of the filter stream (:meth:`~sparseforge.sw.eureka_format.EurekaFormat.beats`):
    a slot word, then {rotation, last, empty}."""
    return data.StructLayout({"slot": slot_layout(fmt),
                              **{f.name: f.width for f in fmt.beat}})


def slab_layout(compaction, act_width, columns=EUREKA_COLUMNS):
    """An input slab: ``[4P rows][columns]`` signed activations."""
    return data.ArrayLayout(data.ArrayLayout(signed(act_width), columns),
                            wire.ROWS * compaction)


def tile_layout(acc_width, columns=EUREKA_COLUMNS):
    """An output tile: ``[4 rows][columns]`` signed accumulators."""
    return data.ArrayLayout(data.ArrayLayout(signed(acc_width), columns), wire.ROWS)


def drained_layout(acc_width, columns=EUREKA_COLUMNS):
    """A finished block as the array hands it out: its ``tile`` (:func:`tile_layout`) in
    MAC-row order and its ``rotation`` (:class:`~sparseforge.sw.wire.EurekaWire`'s header
    field): MAC row m holds output row (m + rotation) % 4."""
    return data.StructLayout({"tile": tile_layout(acc_width, columns),
                              "rotation": wire.ROTATION_BITS})


def slot_counts_layout(rows, per_slot=wire.PER_SLOT):
    """A systolic slot descriptor: blocks (0..``per_slot``) per systolic row, row 0 lowest.

    Each count is as wide as ``per_slot`` needs (:func:`~sparseforge.sw.wire.slot_count_bits`
    bits for the schedule's :data:`~sparseforge.sw.wire.PER_SLOT`).
    """
    return data.ArrayLayout(range(per_slot + 1), rows)


class EurekaRowSignature(wiring.Signature):
    """A row of Eureka sub-arrays (one sub-array, or a systolic row), seen from the array.

    ``columns`` input columns in all (4 per 4x4 sub-array), compaction P,
    ``weight_width``-bit filter values, ``act_width``-bit activations,
    ``acc_width``-bit results, all two's complement. One *block* is one
    transfer on ``filter`` and one on ``inputs``, and yields one transfer
    on ``outputs``. Protocol:

    - ``filter`` (stream in, :func:`beat_layout`): per block, one beat per
      cycle of it, each a slot word with the block's rotation, the last
      marked ``last``; an empty block is one beat of zero lanes marked
      ``last`` and ``empty``.
    - ``inputs`` (stream in, :func:`slab_layout`): the block's 4P input rows,
      read from the cycle after its first beat is taken to the cycle after
      its last is, and transferred on that last cycle (one cycle after the
      last beat when nothing stalls).
    - ``outputs`` (stream out, :func:`drained_layout`): per block, in block
      order, its 4 MAC rows' results and its rotation; whoever takes them puts
      MAC row m on output row (m + rotation) % 4. A tile not yet taken stalls
      the array.
    """

    def __init__(self, compaction, weight_width, act_width, acc_width,
                 columns=EUREKA_COLUMNS):
        fmt = wire.EurekaWire(compaction, weight_width)
        super().__init__({
            "filter": In(stream.Signature(beat_layout(fmt))),
            "inputs": In(stream.Signature(slab_layout(compaction, act_width, columns))),
            "outputs": Out(stream.Signature(drained_layout(acc_width, columns))),
        })


class SystolicSlotsSignature(wiring.Signature):
    """The slot descriptors of a systolic schedule (:mod:`sparseforge.sw.systolic`), seen
    from the array that runs them on ``rows`` systolic rows.

    - ``slots`` (stream in, :func:`slot_counts_layout`): one descriptor per
      slot, in schedule order: how many blocks (0 to ``per_slot``) each
      systolic row runs in the slot. The array takes a descriptor on the
      cycle the last of its blocks ends (at once when it has none); no
      row starts a block of the next slot before that.
    """

    def __init__(self, rows, per_slot=wire.PER_SLOT):
        super().__init__({"slots": In(stream.Signature(slot_counts_layout(rows, per_slot)))})


# -- MINT building blocks (Section V-A, Fig. 8a): payloads the converters pack ---------

def prefix_sum_layouts(lanes, width):
    """The prefix-sum unit's payloads ``(counts, sums)``: ``{counts[lanes], last}`` in,
    ``{sums[lanes], total, last}`` out, every count and sum ``width`` bits."""
    counts = data.StructLayout({"counts": data.ArrayLayout(width, lanes), "last": 1})
    sums = data.StructLayout({"sums": data.ArrayLayout(width, lanes), "total": width,
                              "last": 1})
    return counts, sums


def divmod_layout(lanes, width):
    """A divide/modulo result vector: ``{quotient, remainder}`` of ``width`` bits per lane."""
    return data.ArrayLayout(data.StructLayout({"quotient": width, "remainder": width}), lanes)


def cluster_layouts(lanes, bins):
    """The cluster counter's payloads ``(indices, histogram)``: ``{indices[lanes], mask}``
    in (``log2(bins)``-bit indices, ``mask`` bit ``i`` set where lane ``i`` holds one),
    the count of each bin (``0..lanes``) out."""
    indices = data.StructLayout({"indices": data.ArrayLayout(ceil_log2(bins), lanes),
                                 "mask": lanes})
    return indices, data.ArrayLayout(range(lanes + 1), bins)


# -- MINT records: the dense vectors and record words the converters and MINT_m share --

def _fields(fields):
    return {f.name: f.width for f in fields}


def dense_layout(lanes, width, rows=True):
    """A dense vector: ``lanes`` values of ``width`` bits (lane 0 first), then
    :func:`~sparseforge.sw.wire.dense_flags` (``row_end`` where ``rows``, and ``last``)."""
    return data.StructLayout({"lanes": data.ArrayLayout(width, lanes),
                              **_fields(wire.dense_flags(rows))})


def record_word_layout(record, lanes, count=True):
    """A word of ``lanes`` records, then :func:`~sparseforge.sw.wire.word_end` (``last``
    only, without ``count``). ``record`` is a tuple of fields or, for plain values, a width."""
    lane = record if isinstance(record, int) else struct(record)
    return data.StructLayout({"lanes": data.ArrayLayout(lane, lanes),
                              **_fields(wire.word_end(lanes, count))})


# -- Tensaurus (Section 5): the streams between its units ------------------------------

def ciss_lane_layout(dw, iw, order=3):
    """A CISS lane as a PE takes it (:class:`~sparseforge.sw.wire.CissWire`'s lane),
    ``marker`` on a header or idle lane (in memory, a lane whose ``nnz`` is 0; in the
    TLU's dense mode a zero is a value), and ``last`` on the end marker: an idle lane
    after the stream's final entry."""
    return data.StructLayout({**{f.name: f.width for f in wire.CissWire(1, dw, iw, order).lane},
                              "marker": 1, "last": 1})


def chunk_layout(vlen, dw):
    """A matrix chunk word (:func:`~sparseforge.sw.wire.tensaurus_chunk`): ``vlen``
    signed values, value 0 lowest."""
    (value,) = wire.tensaurus_chunk(dw)
    return data.ArrayLayout(signed(value.width), vlen)


def pe_request_layout(iw, chunks):
    """A PE's read of its scratchpad: ``operand`` 0 (the matrix a nonzero scales: C in
    MTTKRP and TTMc, B in MM) or 1 (B, at a fiber's end), its ``row`` and ``chunk``
    (which of the row's ``chunks`` VLEN-wide pieces this PE holds: ``tlen`` of C or of
    B in MTTKRP, ``ceil(r1 / vlen)`` of B, all of its row, in TTMc)."""
    return data.StructLayout({"operand": 1, "row": iw, "chunk": ceil_log2(max(chunks, 2))})


def spm_chunks(tlen, vlen, r1=1):
    """Chunks of a row a scratchpad holds per operand: ``tlen``, or a whole TTMc row of
    B's ``r1`` values if that is more."""
    return max(tlen, -(-r1 // vlen))


def chunk_bits(chunks):
    """Bits of a chunk index among ``chunks`` (at least 1)."""
    return ceil_log2(max(chunks, 2))


def pe_drain_layout(iw, olen, vlen, acc_width):
    """An OSR entry drained to the MSU: the output ``row`` (the slice index i), its
    ``chunk`` (of the OSR's ``olen``) and ``vlen`` accumulated ``lanes``; or, with
    ``last``, no entry but the PE's end: it has drained everything (row, chunk and lanes
    0)."""
    return data.StructLayout({"row": iw, "chunk": chunk_bits(olen),
                              "lanes": data.ArrayLayout(signed(acc_width), vlen), "last": 1})


class ScratchpadPortSignature(wiring.Signature):
    """A PE's port on its column's scratchpad (SPM), seen from the PE.

    - ``request`` (stream out, :func:`pe_request_layout`): a chunk of a matrix row.
    - ``response`` (stream in): its ``vlen`` signed ``dw``-bit values, one per request,
      in request order, after any latency.
    """

    def __init__(self, iw, chunks, vlen, dw):
        super().__init__({
            "request": Out(stream.Signature(pe_request_layout(iw, chunks))),
            "response": In(stream.Signature(chunk_layout(vlen, dw))),
        })


def spm_fill_layout(iw, tlen, vlen, dw):
    """A write into a scratchpad from the MLU: the buffer ``half`` (double buffering),
    the ``operand`` (0 or 1, as :func:`pe_request_layout`), ``row``, ``chunk`` and the
    chunk's ``vlen`` values."""
    return data.StructLayout({"half": 1, "operand": 1, "row": iw, "chunk": chunk_bits(tlen),
                              "lanes": chunk_layout(vlen, dw)})


class RowReadSignature(wiring.Signature):
    """A read port on a sparse matrix's rows (B's, for the Gustavson engine), seen from
    the block that reads them.

    - ``request`` (stream out, :func:`~sparseforge.sw.wire.row_request`): the ``row`` to
      read. It names the row, not an address: where a row lies is the server's
      metadata (a CSR's row pointers; the HYTE accessor's segment begins, Section 6.3).
    - ``response`` (stream in, :func:`~sparseforge.sw.wire.row_element`): each row's
      elements in request order, ``{col, value}`` in column order, ``last`` on a row's
      final one; an empty row is one element with ``empty`` and ``last``. The server
      answers after any latency and may stall; the reader may hold ``ready`` low.

    The Gustavson engine (:mod:`~.gustavson`) reads B's rows through it; the CSR row
    reader (:mod:`~.csr_reader`) serves it from a CSR in memory (``row_ptr[row]``,
    ``row_ptr[row + 1]``, then the elements between). A HYTE accessor
    (:class:`~.hyte_accessor.HyteAccessorSignature`) can serve it instead through an
    adapter that reads segment ``row - k0`` (the tile's first row) at offsets 0, 1, ...
    until its final word (the answer's ``last``) or ``END``, and fetches a ``MISS`` from
    memory (:class:`~.hyte_rows.HyteRows`).
    """

    def __init__(self, index_width, value_width):
        super().__init__({
            "request": Out(stream.Signature(struct(wire.row_request(index_width)))),
            "response": In(stream.Signature(struct(wire.row_element(index_width,
                                                                     value_width)))),
        })


class TaggedMemoryPortSignature(wiring.Signature):
    """A read port on a memory that answers out of order, seen from the reader.

    - ``request`` (stream out): ``{addr, tag}``; the reader never has two reads of one
      tag in flight.
    - ``response`` (stream in): ``{tag, data}``, one per request, in any order.
    """

    def __init__(self, addr_width, data_width, tag_width):
        super().__init__({
            "request": Out(stream.Signature(data.StructLayout({"addr": addr_width,
                                                               "tag": tag_width}))),
            "response": In(stream.Signature(data.StructLayout({"tag": tag_width,
                                                               "data": data_width}))),
        })


def ciss_entry_layout(pes, dw, iw, order=3):
    """A CISS entry as memory holds it: ``pes`` lanes, PE 0's in the low bits, each as
    :class:`~sparseforge.sw.wire.CissWire` packs it."""
    lane = data.StructLayout({f.name: f.width for f in wire.CissWire(1, dw, iw, order).lane})
    return data.ArrayLayout(lane, pes)


def mlu_start_layout(iw, addr_width):
    """What the MLU loads: operand 0's ``rows0`` rows from ``base0`` and operand 1's
    ``rows1`` rows from ``base1`` (0 rows: none), into the scratchpads' ``half``; with
    ``broadcast``, operand 1's rows are B's of TTMc, each whole into every column
    (:class:`~sparseforge.hw.tensaurus_mlu.MluSignature`)."""
    return data.StructLayout({"base0": addr_width, "rows0": iw + 1,
                              "base1": addr_width, "rows1": iw + 1, "half": 1,
                              "broadcast": 1})


