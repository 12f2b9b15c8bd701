"""The named interfaces blocks connect through, with their payload layouts.

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
from ..sw.wire import MintMode, TensaurusKernel


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


class MemoryPortSignature(wiring.Signature):
    """A read port on a parent's memory, seen from the block that fetches through it.

    - ``request`` (stream out): addresses of ``addr_width`` bits, one per
      element wanted.
    - ``response`` (stream in): the data, ``data_width`` bits, one per accepted
      request and in request order. The fetcher may hold ``ready`` low; the
      parent holds the response until it is taken, and stalls requests as it
      needs (the fetcher must not assume any latency).
    """

    def __init__(self, addr_width, data_width):
        super().__init__({
            "request": Out(stream.Signature(addr_width)),
            "response": In(stream.Signature(data_width)),
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


class MacGridSignature(wiring.Signature):
    """What a grid of Eureka MACs takes each cycle, seen from the grid (4 MAC rows, ``columns``
    MAC columns, compaction P).

    Not a stream: the controls act on the cycle they are driven.

    - ``weight``, ``select``, ``displaced`` (in, one per MAC row): the MAC
      row's filter value (0 idles it), the input row its 4P:1 operand
      multiplexer selects, and whether the value belongs to the MAC row
      above (which adds the product; never set on MAC row 0).
    - ``operands`` (in, :func:`slab_layout`): the block's input slab,
      column n broadcast down MAC column n.
    - ``enable`` (in): accumulate this cycle's slot; ``clear`` (in): with
      ``enable``, start new outputs (the accumulators ignore what they hold).
    - ``advance`` (in): the grid's pipeline moves on; low holds every
      register of it, the accumulators included, and the controls and slab
      of that cycle are not taken.
    """

    def __init__(self, compaction, weight_width, act_width, columns=EUREKA_COLUMNS):
        super().__init__({
            "weight": In(data.ArrayLayout(signed(weight_width), wire.ROWS)),
            "select": In(data.ArrayLayout(range(wire.ROWS * compaction), wire.ROWS)),
            "displaced": In(wire.ROWS),
            "operands": In(slab_layout(compaction, act_width, columns)),
            "enable": In(1),
            "clear": In(1),
            "advance": In(1),
        })


# -- MINT building blocks (Section V-A, Fig. 8a) ---------------------------------------

def prefix_sum_layouts(lanes, width):
    """The prefix-sum unit's payloads ``(counts, sums)``: ``{counts[lanes], last}`` in,
    ``{sums[lanes], total, last}`` out, every count and sum ``width`` bits."""
    counts = data.StructLayout({"counts": data.ArrayLayout(width, lanes), "last": 1})
    sums = data.StructLayout({"sums": data.ArrayLayout(width, lanes), "total": width,
                              "last": 1})
    return counts, sums


class PrefixSumSignature(wiring.Signature):
    """A prefix-sum (scan) unit over ``lanes`` counts of ``width`` bits a cycle, seen from it.

    A *sequence* (one matrix's counts) is a run of vectors ending with ``last``.

    - ``counts`` (stream in, :func:`prefix_sum_layouts`): one vector, lane 0
      first; ``last`` ends the sequence, and the running sum starts again
      from 0 with the next vector.
    - ``sums`` (stream out): one per vector, in order. ``sums[i]`` is the sum
      of the sequence's counts before lane ``i`` of this vector (exclusive
      scan), or up to and including it (inclusive scan, where the unit is
      built so); ``total`` the sum up to and including this vector's last
      lane (the sequence's size on its ``last`` vector); ``last`` as given.
      All modulo ``2**width``.
    """

    def __init__(self, lanes, width):
        counts, sums = prefix_sum_layouts(lanes, width)
        super().__init__({"counts": In(stream.Signature(counts)),
                          "sums": Out(stream.Signature(sums))})


def divmod_layout(lanes, width):
    """A divide/modulo result vector: ``{quotient, remainder}`` of ``width`` bits per lane."""
    return data.ArrayLayout(data.StructLayout({"quotient": width, "remainder": width}), lanes)


class DivModSignature(wiring.Signature):
    """A parallel divide and modulo unit, ``lanes`` unsigned ``width``-bit dividends a cycle.

    - ``dividends`` (stream in, ``lanes`` x ``width`` bits): one vector.
    - ``divisor`` (in, ``width`` bits): the divisor (a tensor dimension),
      sampled with each vector as it is accepted. Hold it while a tensor's
      vectors stream in; a change applies to vectors accepted from then on.
    - ``results`` (stream out, :func:`divmod_layout`): one per vector, in
      order: ``dividend // divisor`` and ``dividend % divisor`` per lane. A
      divisor of 0 gives a quotient of all ones and the dividend as remainder.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "dividends": In(stream.Signature(data.ArrayLayout(width, lanes))),
            "divisor": In(width),
            "results": Out(stream.Signature(divmod_layout(lanes, width))),
        })


def zero_detect_layout(lanes, width):
    """Zero detection's output: the ``values`` as given, the ``mask`` of the nonzero
    ones (bit ``i`` for lane ``i``) and their ``count``."""
    return data.StructLayout({"values": data.ArrayLayout(width, lanes), "mask": lanes,
                              "count": range(lanes + 1)})


class ZeroDetectSignature(wiring.Signature):
    """Zero detection over ``lanes`` values of ``width`` bits a cycle, seen from the unit.

    - ``values`` (stream in, ``lanes`` x ``width`` bits): one vector.
    - ``detect`` (stream out, :func:`zero_detect_layout`): one per vector, in
      order.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "values": In(stream.Signature(data.ArrayLayout(width, lanes))),
            "detect": Out(stream.Signature(zero_detect_layout(lanes, width))),
        })


def cluster_layouts(lanes, bins):
    """The cluster counter's payloads ``(indices, histogram)``: ``{indices[lanes], mask}``
    in (``log2(bins)``-bit indices, ``mask`` bit ``i`` set where lane ``i`` holds one),
    the count of each bin (``0..lanes``) out."""
    indices = data.StructLayout({"indices": data.ArrayLayout(ceil_log2(bins), lanes),
                                 "mask": lanes})
    return indices, data.ArrayLayout(range(lanes + 1), bins)


class ClusterCountSignature(wiring.Signature):
    """A cluster counter: the histogram of a chunk of ``lanes`` indices into ``bins`` bins.

    - ``indices`` (stream in, :func:`cluster_layouts`): one chunk; lanes
      whose ``mask`` bit is clear hold no index (a partial chunk).
    - ``histogram`` (stream out): one per chunk, in order: per bin value
      ``b``, how many of the chunk's indices equal ``b``.
    """

    def __init__(self, lanes, bins):
        indices, histogram = cluster_layouts(lanes, bins)
        super().__init__({"indices": In(stream.Signature(indices)),
                          "histogram": Out(stream.Signature(histogram))})


def sort_layout(lanes, key_width, data_width):
    """A chunk to sort: ``lanes`` records ``{key, data}``."""
    return data.ArrayLayout(data.StructLayout({"key": key_width, "data": data_width}), lanes)


class SortSignature(wiring.Signature):
    """A sorting network over chunks of ``lanes`` ``{key, data}`` records, seen from it.

    - ``chunk`` (stream in, :func:`sort_layout`): one chunk. Pad a partial
      chunk's last lanes with the largest key: they sort to the end.
    - ``sorted`` (stream out, the same layout): one per chunk, in order: its
      records by ascending unsigned key; records with equal keys keep their
      input order (a stable sort).
    """

    def __init__(self, lanes, key_width, data_width):
        layout = sort_layout(lanes, key_width, data_width)
        super().__init__({"chunk": In(stream.Signature(layout)),
                          "sorted": Out(stream.Signature(layout))})


# -- MINT converters (Section V-B, Fig. 8c and 8f) -------------------------------------

def csc_pointer_layout(lanes, ptr_width):
    """A vector of CSC column pointers: ``ptr[lanes]``, and ``last`` on a matrix's final one."""
    return data.StructLayout({"ptr": data.ArrayLayout(ptr_width, lanes), "last": 1})


class CsrToCscSignature(wiring.Signature):
    """A CSR-to-CSC converter, seen from it: ``lanes`` column ids a chunk and pointers a
    vector, at most ``max_rows`` rows, ``max_cols`` columns and ``max_nnz`` nonzeros of
    ``value_width``-bit values. Pointers are ``ceil_log2(max_nnz + 1)`` bits.

    A matrix is one ``shape``, then its CSR twice: once as column ids to count, once as
    entries to place. Protocol, per matrix:

    - ``shape`` (stream in, :func:`~sparseforge.sw.wire.csr_shape`): ``rows``, ``cols``
      and ``nnz``; taken while the converter is idle (between matrices).
    - ``col_ids`` (stream in, ``lanes`` column ids): the CSR ``col_ids`` in order,
      ``lanes`` a chunk, ``ceil(nnz / lanes)`` chunks; lanes past the ``nnz``-th id are
      ignored.
    - ``row_ptr`` (stream in, a pointer): ``row_ptr[1 .. rows]``, each row's end.
    - ``csr`` (stream in, :func:`~sparseforge.sw.wire.csr_entry`): the ``nnz`` entries
      ``{col, value}`` in CSR order. ``row_ptr`` and ``csr`` are taken only after every
      pointer is out on ``col_ptr``.
    - ``col_ptr`` (stream out, :func:`csc_pointer_layout`): ``col_ptr[0 .. cols]`` and
      beyond, ``lanes`` a vector, ``cols // lanes + 1`` vectors, ``last`` on the final
      one; lanes past ``cols`` hold ``nnz``.
    - ``csc`` (stream out, :func:`~sparseforge.sw.wire.csc_entry`): the ``nnz`` entries
      ``{row, value}`` in CSC order (by column, rows ascending within one).
    """

    def __init__(self, lanes, max_rows, max_cols, max_nnz, value_width):
        ptr, col = ceil_log2(max_nnz + 1), ceil_log2(max_cols)
        shape = wire.csr_shape(ceil_log2(max_rows + 1), ceil_log2(max_cols + 1), ptr)
        super().__init__({
            "shape": In(stream.Signature(struct(shape))),
            "col_ids": In(stream.Signature(data.ArrayLayout(col, lanes))),
            "row_ptr": In(stream.Signature(ptr)),
            "csr": In(stream.Signature(struct(wire.csr_entry(col, value_width)))),
            "col_ptr": Out(stream.Signature(csc_pointer_layout(lanes, ptr))),
            "csc": Out(stream.Signature(struct(wire.csc_entry(ceil_log2(max_rows),
                                                              value_width)))),
        })


def csf_level_layout(lanes, id_width, data_width, count_width):
    """A CSF level record: ``lanes`` x :func:`~sparseforge.sw.wire.csf_node`, then
    :func:`~sparseforge.sw.wire.csf_level_end`'s ``{mask, last, total}``."""
    return data.StructLayout({
        "lanes": data.ArrayLayout(struct(wire.csf_node(id_width, data_width)), lanes),
        **{f.name: f.width for f in wire.csf_level_end(lanes, count_width)}})


class DenseToCsfSignature(wiring.Signature):
    """A Dense-to-CSF converter of 3-D tensors, seen from it: ``lanes`` elements a vector,
    coordinates of ``index_width`` bits, node counts and pointers of ``count_width`` bits,
    ``value_width``-bit values.

    A tensor is one ``shape``, then its elements. Protocol, per tensor:

    - ``shape`` (stream in, :func:`~sparseforge.sw.wire.tensor_shape`): ``dim0..dim2``,
      each from 1 to ``2**index_width``, ``dim2`` at least ``lanes``; taken between
      tensors.
    - ``dense`` (stream in, ``lanes`` values): the elements in row-major order, lane 0
      first, ``ceil(dim0 * dim1 * dim2 / lanes)`` vectors; lanes past the last element
      are ignored.
    - ``level0``, ``level1``, ``level2`` (streams out, :func:`csf_level_layout`): the
      tree's levels (mode 0 to mode 2), one record per vector that holds a node of that
      level, and a record for the tensor's last vector on every level. A record's lanes
      whose ``mask`` bit is set are its nodes, in order: ``id`` is the node's fids entry,
      ``data`` its fptr entry (the index of its first child on the next level) or, on
      ``level2``, its value's bits. ``total`` counts the level's nodes so far: on the
      ``last`` record of ``level1`` and ``level2``, the final entries of ``fptr0`` and
      ``fptr1``. Counts and pointers wrap modulo ``2**count_width``.
    """

    def __init__(self, lanes, index_width, count_width, value_width):
        node = csf_level_layout(lanes, index_width, count_width, count_width)
        leaf = csf_level_layout(lanes, index_width, value_width, count_width)
        super().__init__({
            "shape": In(stream.Signature(struct(wire.tensor_shape(index_width + 1)))),
            "dense": In(stream.Signature(data.ArrayLayout(value_width, lanes))),
            "level0": Out(stream.Signature(node)),
            "level1": Out(stream.Signature(node)),
            "level2": Out(stream.Signature(leaf)),
        })


# -- MINT converters (Section V-B, Fig. 8d and 8e) -------------------------------------

def rlc_vector_layout(lanes, run_bits, value_width):
    """A vector into RLC-to-COO: ``lanes`` x :func:`~sparseforge.sw.wire.rlc_pair`, then
    :func:`~sparseforge.sw.wire.rlc_end`'s ``last``."""
    return data.StructLayout({
        "pairs": data.ArrayLayout(struct(wire.rlc_pair(run_bits, value_width)), lanes),
        **{f.name: f.width for f in wire.rlc_end()}})


class RlcToCooSignature(wiring.Signature):
    """An RLC-to-COO converter, seen from it: ``lanes`` pairs a vector, ``run_bits``-bit
    runs, row-major positions, rows and columns of ``width`` bits, ``value_width``-bit
    values. Protocol:

    - ``pairs`` (stream in, :func:`rlc_vector_layout`): a matrix's RLC pairs in order,
      ``lanes`` a vector, ``last`` on its final vector; lanes after the final pair hold
      (0, 0). A matrix with no nonzeros sends no vector.
    - ``columns`` (in, ``width`` bits): the matrix's column count (the paper's K),
      held while its vectors stream in.
    - ``records`` (stream out, :func:`~sparseforge.sw.wire.coo_record`): one
      ``{row, col, value, last}`` per nonzero, in row-major order, ``last`` on the
      matrix's final one. Fillers (value 0) emit nothing.
    """

    def __init__(self, lanes, run_bits, width, value_width):
        super().__init__({
            "pairs": In(stream.Signature(rlc_vector_layout(lanes, run_bits, value_width))),
            "columns": In(width),
            "records": Out(stream.Signature(struct(wire.coo_record(width, value_width)))),
        })


class CsrToBsrSignature(wiring.Signature):
    """A CSR-to-BSR converter of ``block`` = (R, C) blocks, seen from it: column indices,
    pointers and counts of ``width`` bits, ``value_width``-bit values. Protocol, per
    matrix:

    - ``row_ptr`` (stream in, :func:`~sparseforge.sw.wire.pointer`): the ``rows + 1`` row
      pointers, the first 0, ``last`` on the final one.
    - ``entries`` (stream in, :func:`~sparseforge.sw.wire.csr_entry`): the nonzeros
      ``{col, value}`` in CSR order, columns ascending within a row.
    - ``block_ptr`` (stream out, :func:`~sparseforge.sw.wire.pointer`): the
      ``rows / R + 1`` block-row pointers, the first 0, ``last`` on the final one.
    - ``blocks`` (stream out, :func:`~sparseforge.sw.wire.bsr_block`): each block that
      holds a nonzero, block rows in order and blocks by ascending ``block_col`` within
      one, its ``R x C`` values zero-filled.
    """

    def __init__(self, block, width, value_width):
        super().__init__({
            "row_ptr": In(stream.Signature(struct(wire.pointer(width)))),
            "entries": In(stream.Signature(struct(wire.csr_entry(width, value_width)))),
            "block_ptr": Out(stream.Signature(struct(wire.pointer(width)))),
            "blocks": Out(stream.Signature(struct(wire.bsr_block(width, value_width,
                                                                 block)))),
        })


# -- MINT converters: Dense to COO, CSR and ZVC, ZVC to Dense (Section V-B) --------------

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


def compact_layouts(lanes, record_width, tag_width=0, position_width=0):
    """The compactor's payloads ``(vectors, words, marks)``.

    ``vectors``: ``{records[lanes], mask, sums[lanes], total, last, mark, tag}``, the
    sums and total ``log2(lanes) + 1`` bits (positions modulo ``2 * lanes``); ``words``:
    :func:`record_word_layout` of ``record_width``-bit records; ``marks``: ``{tag,
    position, last}``.
    """
    position = ceil_log2(lanes) + 1
    vectors = data.StructLayout({
        "records": data.ArrayLayout(record_width, lanes), "mask": lanes,
        "sums": data.ArrayLayout(position, lanes), "total": position, "last": 1, "mark": 1,
        "tag": tag_width})
    marks = data.StructLayout({"tag": tag_width, "position": position_width, "last": 1})
    return vectors, record_word_layout(record_width, lanes), marks


class CompactSignature(wiring.Signature):
    """A stream compactor, seen from it: vectors of ``lanes`` records of ``record_width``
    bits in, the records whose mask bit is set out, packed ``lanes`` a word.

    - ``vectors`` (stream in, :func:`compact_layouts`): ``records``, ``mask`` (bit ``i``
      set where record ``i`` is kept), ``sums`` and ``total`` (the prefix-sum unit's
      exclusive sums of the mask bits and its total, modulo ``2 * lanes``: each kept
      record's position in the matrix, and the position after the vector), ``last`` on a
      matrix's final vector; ``mark`` and ``tag`` ask for a mark.
    - ``words`` (stream out): the kept records in order, framed as
      :func:`~sparseforge.sw.wire.word_end` says.
    - ``marks`` (stream out, present where ``tag_width`` or ``position_width`` is not
      0): one per vector with ``mark`` set, in order: its ``tag``, ``position`` (the
      records kept in the matrix so far, this vector's included, modulo
      ``2**position_width``) and ``last``.
    """

    def __init__(self, lanes, record_width, tag_width=0, position_width=0):
        vectors, words, marks = compact_layouts(lanes, record_width, tag_width,
                                                position_width)
        members = {"vectors": In(stream.Signature(vectors)),
                   "words": Out(stream.Signature(words))}
        if tag_width or position_width:
            members["marks"] = Out(stream.Signature(marks))
        super().__init__(members)


def expand_layout(lanes):
    """The expander's positions: ``{mask, sums[lanes], total, last}``, as the compactor's."""
    position = ceil_log2(lanes) + 1
    return data.StructLayout({"mask": lanes, "sums": data.ArrayLayout(position, lanes),
                              "total": position, "last": 1})


class ExpandSignature(wiring.Signature):
    """A stream expander, the compactor's inverse, seen from it: ``lanes`` lanes of
    ``width`` bits.

    - ``vectors`` (stream in, :func:`expand_layout`): a mask, the prefix-sum unit's
      exclusive sums of its bits and their total (modulo ``2 * lanes``), ``last``.
    - ``values`` (stream in, :func:`record_word_layout` without ``count``): the packed
      values, framed as :func:`~sparseforge.sw.wire.word_end` says.
    - ``dense`` (stream out, :func:`dense_layout`, flat): per vector, lane ``i`` the next
      packed value where mask bit ``i`` is set, else 0; ``last`` as given.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "vectors": In(stream.Signature(expand_layout(lanes))),
            "values": In(stream.Signature(record_word_layout(width, lanes, count=False))),
            "dense": Out(stream.Signature(dense_layout(lanes, width, rows=False))),
        })


class DenseToCooSignature(wiring.Signature):
    """A Dense-to-COO converter, seen from it: ``lanes`` values of ``width`` bits a vector,
    row and column ids of ``index_width`` bits.

    - ``dense`` (stream in, :func:`dense_layout`, row-padded): a matrix's rows.
    - ``coo`` (stream out, :func:`record_word_layout` of
      :func:`~sparseforge.sw.wire.coo_entry`): its nonzeros ``{row, col, value}`` in
      row-major order, ``lanes`` a word, framed as :func:`~sparseforge.sw.wire.word_end`
      says.
    """

    def __init__(self, lanes, width, index_width):
        entry = wire.coo_entry(index_width, width)
        super().__init__({"dense": In(stream.Signature(dense_layout(lanes, width))),
                          "coo": Out(stream.Signature(record_word_layout(entry, lanes)))})


class DenseToCsrSignature(wiring.Signature):
    """A Dense-to-CSR converter, seen from it: ``lanes`` values of ``width`` bits a vector,
    column ids of ``index_width`` bits, row pointers of ``ptr_width`` bits.

    - ``dense`` (stream in, :func:`dense_layout`, row-padded): a matrix's rows.
    - ``entries`` (stream out, :func:`record_word_layout` of
      :func:`~sparseforge.sw.wire.csr_entry`): its nonzeros ``{col, value}`` in row-major
      order, ``lanes`` a word, framed as :func:`~sparseforge.sw.wire.word_end` says.
    - ``row_ptr`` (stream out, :func:`~sparseforge.sw.wire.pointer`): ``row_ptr[1 ..
      rows]``, each row's end (``row_ptr[0]`` is 0), ``last`` on the final one; modulo
      ``2**ptr_width``.
    """

    def __init__(self, lanes, width, index_width, ptr_width):
        entry = wire.csr_entry(index_width, width)
        super().__init__({
            "dense": In(stream.Signature(dense_layout(lanes, width))),
            "entries": Out(stream.Signature(record_word_layout(entry, lanes))),
            "row_ptr": Out(stream.Signature(struct(wire.pointer(ptr_width)))),
        })


class DenseToZvcSignature(wiring.Signature):
    """A Dense-to-ZVC converter, seen from it: ``lanes`` values of ``width`` bits a vector.

    - ``dense`` (stream in, :func:`dense_layout`, flat): a matrix's elements.
    - ``mask`` (stream out, :func:`~sparseforge.sw.wire.zvc_mask`): one word per vector,
      ``last`` on the final one.
    - ``values`` (stream out, :func:`record_word_layout` without ``count``): the nonzeros in
      order, ``lanes`` a word, framed as :func:`~sparseforge.sw.wire.word_end` says.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "dense": In(stream.Signature(dense_layout(lanes, width, rows=False))),
            "mask": Out(stream.Signature(struct(wire.zvc_mask(lanes)))),
            "values": Out(stream.Signature(record_word_layout(width, lanes, count=False))),
        })


class ZvcToDenseSignature(wiring.Signature):
    """A ZVC-to-Dense converter, seen from it: the Dense-to-ZVC converter's streams, each
    the other way.

    - ``mask`` (stream in, :func:`~sparseforge.sw.wire.zvc_mask`) and ``values`` (stream
      in): a matrix in ZVC, as Dense-to-ZVC emits it.
    - ``dense`` (stream out, :func:`dense_layout`, flat): one vector per mask word.
    """

    def __init__(self, lanes, width):
        super().__init__({
            "mask": In(stream.Signature(struct(wire.zvc_mask(lanes)))),
            "values": In(stream.Signature(record_word_layout(width, lanes, count=False))),
            "dense": Out(stream.Signature(dense_layout(lanes, width, rows=False))),
        })


def mint_mark(lanes, ptr_width):
    """A mark of the merged converter: a CSR row pointer ``ptr`` or a ZVC ``mask`` word,
    and ``last`` on a matrix's final one."""
    return data.StructLayout({"ptr": ptr_width, "mask": lanes, "last": 1})


class MintMergedSignature(wiring.Signature):
    """The merged converter (MINT_m), seen from it: the Dense and ZVC conversions of the
    separate converters through one set of streams, ``mode`` choosing the conversion.

    - ``mode`` (in, :class:`~sparseforge.sw.wire.MintMode`): held while a matrix
      streams; change it only once the previous matrix's outputs have all left.
    - ``dense`` (stream in, :func:`dense_layout`): a matrix, row-padded for Dense to COO
      and CSR, flat (``row_end`` 0) for Dense to ZVC.
    - ``mask`` and ``values`` (streams in): a matrix in ZVC, for ZVC to Dense, as
      :class:`ZvcToDenseSignature` takes them.
    - ``words`` (stream out, :func:`record_word_layout` of
      :func:`~sparseforge.sw.wire.coo_entry`): the nonzeros, ``lanes`` a word, framed as
      :func:`~sparseforge.sw.wire.word_end` says; COO uses every field, CSR ``col`` and
      ``value``, ZVC ``value``.
    - ``marks`` (stream out, :func:`mint_mark`): CSR's ``row_ptr[1 .. rows]`` in ``ptr``,
      or ZVC's mask words in ``mask``, ``last`` on the final one.
    - ``expanded`` (stream out, :func:`dense_layout`, flat): ZVC to Dense's vectors.
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


def ciss_lane_layout(dw, iw, order=3):
    """A CISS lane as a PE takes it (:class:`~sparseforge.sw.wire.CissWire`'s lane), and
    ``last`` on the end marker: an idle lane after the stream's final entry."""
    return data.StructLayout({**{f.name: f.width for f in wire.CissWire(1, dw, iw, order).lane},
                              "last": 1})


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


class TensaurusPeSignature(wiring.Signature):
    """A Tensaurus PE, seen from it (Section 5.2.4, Fig. 5b).

    - ``kernel`` (in, :class:`~sparseforge.sw.wire.TensaurusKernel`): held while a stream runs.
    - ``lane`` (stream in, :func:`ciss_lane_layout`): its CISS lane, entry by entry,
      then the end marker.
    - ``forward`` (stream out): every lane item as taken, to the next PE of the row.
    - ``spm`` (out, :class:`ScratchpadPortSignature`): its scratchpad reads, of
      :func:`spm_chunks` chunks a row.
    - ``drain`` (stream out, :func:`pe_drain_layout`): each finished slice's OSR, one
      entry per chunk (``tlen``, or in TTMc ``olen = r1 * tlen``), and after the end
      marker one item with ``last``.
    """

    def __init__(self, vlen, tlen, dw, iw, acc_width, order=3, r1=1):
        super().__init__({
            "kernel": In(TensaurusKernel),
            "lane": In(stream.Signature(ciss_lane_layout(dw, iw, order))),
            "forward": Out(stream.Signature(ciss_lane_layout(dw, iw, order))),
            "spm": Out(ScratchpadPortSignature(iw, spm_chunks(tlen, vlen, r1), vlen, dw)),
            "drain": Out(stream.Signature(pe_drain_layout(iw, r1 * tlen, vlen, acc_width))),
        })


def spm_fill_layout(iw, tlen, vlen, dw):
    """A write into a scratchpad from the MLU: the buffer ``half`` (double buffering),
    the ``operand`` (0 or 1, as :func:`pe_request_layout`), ``row``, ``chunk`` and the
    chunk's ``vlen`` values."""
    return data.StructLayout({"half": 1, "operand": 1, "row": iw, "chunk": chunk_bits(tlen),
                              "lanes": chunk_layout(vlen, dw)})


class SpmSignature(wiring.Signature):
    """A Tensaurus scratchpad (Section 5.2.3, Fig. 5a), seen from it: one per PE column.

    - ``fill`` (stream in, :func:`spm_fill_layout`): the MLU's writes, one a cycle.
    - ``read_half`` (in): the half the PEs read; fills go to either half, and a fill
      into the half being read is the writer's own affair.
    - ``ports`` (``ports`` of them, each the flip of :class:`ScratchpadPortSignature`):
      one per PE of the column; each answers its requests in order.
    """

    def __init__(self, ports, iw, tlen, vlen, dw):
        super().__init__({
            "fill": In(stream.Signature(spm_fill_layout(iw, tlen, vlen, dw))),
            "read_half": In(1),
            "ports": In(ScratchpadPortSignature(iw, tlen, vlen, dw)).array(ports),
        })


def msu_out_layout(iw, chunks, vlen, acc_width):
    """An output chunk from the MSU: ``row``, ``chunk`` (of the row's ``chunks``), its
    ``vlen`` accumulated ``lanes``, ``last`` on the final one."""
    return data.StructLayout({"row": iw, "chunk": chunk_bits(chunks),
                              "lanes": data.ArrayLayout(signed(acc_width), vlen), "last": 1})


class MsuSignature(wiring.Signature):
    """A Tensaurus matrix store unit (Section 5.2.5), seen from it.

    - ``drains`` (``rows x cols`` streams in, :func:`pe_drain_layout`): PE ``(r, q)``'s
      drains at index ``r * cols + q``; its chunk ``t`` is the row's chunk ``t * cols +
      q``.
    - ``out_rows`` (in): rows of the output (held while a run goes).
    - ``out`` (stream out, :func:`msu_out_layout`): once every input has sent its
      ``last``, rows ``0 .. out_rows - 1``, each its ``tlen * cols`` chunks in order,
      each the sum of every drain of that chunk since the previous output (0 if none).
      With ``out_rows`` 0 nothing is sent and the sums stay: the next tile adds to them.
    - ``closing`` (out): high from the cycle an input's ``last`` is taken until the
      inputs are released (the output sent, or at once with ``out_rows`` 0); a
      controller waits for it to fall before it changes ``out_rows``.
    """

    def __init__(self, rows, cols, iw, tlen, vlen, acc_width):
        drain = stream.Signature(pe_drain_layout(iw, tlen, vlen, acc_width))
        super().__init__({
            "drains": In(drain).array(rows * cols),
            "out_rows": In(iw + 1),
            "out": Out(stream.Signature(msu_out_layout(iw, tlen * cols, vlen, acc_width))),
            "closing": Out(1),
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


class TluSignature(wiring.Signature):
    """A Tensaurus tensor load unit (Section 5.2.1), seen from it.

    - ``start`` (stream in): ``{base, count}``, a CISS stream of ``count`` entries at
      ``base``; taken when the previous one has been sent whole.
    - ``mem`` (out, :class:`TaggedMemoryPortSignature`): one entry a read, answered in
      any order.
    - ``lanes`` (``pes`` streams out, :func:`ciss_lane_layout`): lane ``p`` of every
      entry in order, then the end marker (an idle lane with ``last``).
    """

    def __init__(self, pes, dw, iw, order, tags, addr_width):
        entry = ciss_entry_layout(pes, dw, iw, order)
        super().__init__({
            "start": In(stream.Signature(data.StructLayout({"base": addr_width,
                                                            "count": addr_width}))),
            "mem": Out(TaggedMemoryPortSignature(addr_width, entry.size, ceil_log2(tags))),
            "lanes": Out(stream.Signature(ciss_lane_layout(dw, iw, order))).array(pes),
        })


def mlu_start_layout(iw, addr_width):
    """What the MLU loads: operand 0's ``rows0`` rows from ``base0`` and operand 1's
    ``rows1`` rows from ``base1`` (0 rows: none), into the scratchpads' ``half``; with
    ``broadcast``, operand 1's rows are B's of TTMc, each whole into every column
    (:class:`MluSignature`)."""
    return data.StructLayout({"base0": addr_width, "rows0": iw + 1,
                              "base1": addr_width, "rows1": iw + 1, "half": 1,
                              "broadcast": 1})


class MluSignature(wiring.Signature):
    """A Tensaurus matrix load unit (Section 5.2.2), seen from it.

    - ``start`` (stream in, :func:`mlu_start_layout`): taken once the previous load has
      been written whole.
    - ``mem`` (out, :class:`MemoryPortSignature`): chunk words (:func:`chunk_layout`); a
      matrix row is ``chunks`` words in order, row after row.
    - ``fills`` (``cols`` streams out, :func:`spm_fill_layout`): a row of ``tlen * cols``
      chunks is split: its chunk ``g`` goes to column ``g % cols``'s scratchpad as its
      chunk ``g // cols``; a broadcast row (operand 1 with ``broadcast``) is ``b_chunks``
      chunks, each to every column's scratchpad as its chunk ``g``; into the start's
      ``half``.
    """

    def __init__(self, cols, iw, tlen, vlen, dw, addr_width, b_chunks=1):
        fill = spm_fill_layout(iw, max(tlen, b_chunks), vlen, dw)
        super().__init__({
            "start": In(stream.Signature(mlu_start_layout(iw, addr_width))),
            "mem": Out(MemoryPortSignature(addr_width, chunk_layout(vlen, dw).size)),
            "fills": Out(stream.Signature(fill)).array(cols),
        })


def tensaurus_job_layout(iw, addr_width):
    """A tile of a Tensaurus run: its CISS stream (``entries`` at ``tensor_base``), its
    rows of the operand matrices as :func:`mlu_start_layout` says (the accelerator picks
    the half, the kernel says whether B is broadcast), the output's rows, and ``last`` on
    the run's final tile (after it the output is sent; before it the sums stay)."""
    return data.StructLayout({"tensor_base": addr_width, "entries": addr_width,
                              **{name: field.shape for name, field in
                                 mlu_start_layout(iw, addr_width)
                                 if name not in ("half", "broadcast")},
                              "out_rows": iw + 1, "last": 1})


class TensaurusSignature(wiring.Signature):
    """The Tensaurus accelerator (Section 5, Fig. 5a), seen from it.

    - ``kernel`` (in, :class:`~sparseforge.sw.wire.TensaurusKernel`): held while a run goes.
    - ``start`` (stream in, :func:`tensaurus_job_layout`): a run's tiles, one item
      each; a tile is taken while the one before it computes (its matrices load into
      the scratchpads' other half), a run's first once the previous run's stats are
      taken.
    - ``tensor_mem`` (out, :class:`TaggedMemoryPortSignature`): the TLU's CISS reads.
    - ``matrix_mem`` (out, :class:`MemoryPortSignature`): the MLU's chunk reads.
    - ``out`` (stream out, :func:`msu_out_layout`): the output, row by row, each
      ``r1 * tlen * cols`` chunks (in MTTKRP and MM the first ``tlen * cols`` hold it).
    - ``stats`` (stream out): after each run's output, its cycles from its first tile to
      its output's end split into those no tile computed, waiting for matrices to load
      (``load_cycles``), and the rest (``compute_cycles``); the next run starts once it
      is taken.
    """

    def __init__(self, rows, cols, vlen, tlen, dw, iw, acc_width, order, tags, addr_width,
                 r1=1):
        entry = ciss_entry_layout(rows, dw, iw, order)
        super().__init__({
            "kernel": In(TensaurusKernel),
            "start": In(stream.Signature(tensaurus_job_layout(iw, addr_width))),
            "tensor_mem": Out(TaggedMemoryPortSignature(addr_width, entry.size,
                                                        ceil_log2(tags))),
            "matrix_mem": Out(MemoryPortSignature(addr_width, chunk_layout(vlen, dw).size)),
            "out": Out(stream.Signature(msu_out_layout(iw, r1 * tlen * cols, vlen,
                                                       acc_width))),
            "stats": Out(stream.Signature(data.StructLayout({"load_cycles": 32,
                                                             "compute_cycles": 32}))),
        })
