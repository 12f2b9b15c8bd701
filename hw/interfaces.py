"""The named interfaces blocks connect through, with their payload layouts.

Each is a ``wiring.Signature`` (class) whose docstring states the protocol
it promises; payload layouts come from the wire formats in
:mod:`sparseforge.sw.wire`, so host encoders and testbenches pack the same
bits. Members are named from the serving block's point of view: a block
declares the signature itself as its own (``super().__init__(BuffetSignature(...))``),
a client that drives it declares ``In(BuffetSignature(...))`` (the flip), a
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


def _buffet_members(depth, width, index):
    index = ceil_log2(depth) if index is None else index
    count = ceil_log2(depth + 1)
    return {
        "fill": In(stream.Signature(width)),
        "read": In(stream.Signature(index)),
        "read_data": Out(stream.Signature(width)),
        "update": In(stream.Signature(struct(wire.buffet_update(index, width)))),
        "shrink": In(stream.Signature(count)),
        "credit": Out(count),
        "occupancy": Out(count),
    }


class BuffetSignature(wiring.Signature):
    """A buffet's port, seen from the buffer: ``depth`` elements of ``width`` bits.

    ``index`` is the width of read and update indices (default: enough for
    ``depth`` elements). Protocol:

    - ``fill`` (stream in): appends the payload at the tail; ``ready`` is low
      while the buffer is full.
    - ``read`` (stream in): asks for the element ``index`` places from the
      head; ``ready`` stays low until that element is present, so a read never
      returns stale data.
    - ``read_data`` (stream out): one response per accepted read, in request
      order; the client may hold ``ready`` low, which stalls ``read``.
    - ``update`` (stream in, ``{index, data}``): overwrites an element already
      filled; ``ready`` is low until it is.
    - ``shrink`` (stream in): frees ``count`` elements from the head; ``ready``
      is low while that many may not be freed.
    - ``credit`` (out): the count freed by the shrink accepted on the previous
      cycle, else 0. A client that starts with ``depth`` credits and spends
      one per fill never overruns the buffer.
    - ``occupancy`` (out): the elements held.
    """

    def __init__(self, depth, width, index=None):
        super().__init__(_buffet_members(depth, width, index))


class TailorSignature(BuffetSignature):
    """A Tailor's port: the buffet's (indices wide enough for ``tile``), and the FIFO region's.

    - ``owfill`` (stream in, ``{data, last}``): the overwriting fill that
      streams a tile's bumped elements, once per pass, ``last`` on the tile's
      last index; ``ready`` while the buffer is full or backfilling.
    - ``fifo_credits`` (out, ``0..fifo``): how many ``owfill`` the client may
      send now without overwriting an element the reader has not passed
      (counting its own in flight against it). The buffer does not enforce it.
    """

    def __init__(self, depth, width, fifo, tile):
        members = _buffet_members(depth, width, ceil_log2(tile))
        members["owfill"] = In(stream.Signature(struct(wire.tailor_owfill(width))))
        members["fifo_credits"] = Out(range(fifo + 1))
        wiring.Signature.__init__(self, members)


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


def record_layout(fmt):
    """One block record (:meth:`~sparseforge.sw.eureka_format.EurekaFormat.records`): the
    header {rotation, cycles}, then 4P slot words."""
    return data.StructLayout({"header": struct(fmt.header),
                              "slots": data.ArrayLayout(slot_layout(fmt), fmt.slots)})


def slab_layout(compaction, act_width, columns=EUREKA_COLUMNS):
    """An input slab: ``[4P rows][columns]`` signed activations."""
    return data.ArrayLayout(data.ArrayLayout(signed(act_width), columns),
                            wire.ROWS * compaction)


def tile_layout(acc_width, columns=EUREKA_COLUMNS):
    """An output tile: ``[4 rows][columns]`` signed accumulators."""
    return data.ArrayLayout(data.ArrayLayout(signed(acc_width), columns), wire.ROWS)


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

    - ``filter`` (stream in, :func:`record_layout`): a block record, the
      header {rotation, cycles} and 4P slot words, the first ``cycles`` of
      them used. ``ready`` is high on the block's last cycle only: the
      record stays presented while the block runs.
    - ``inputs`` (stream in, :func:`slab_layout`): the block's 4P input rows;
      transferred on the same cycle as its record.
    - ``outputs`` (stream out, :func:`tile_layout`): the block's 4 output
      rows, in output-row order (rotation undone), in block order. A tile not
      yet taken holds the next block at its first cycle.
    """

    def __init__(self, compaction, weight_width, act_width, acc_width,
                 columns=EUREKA_COLUMNS):
        fmt = wire.EurekaWire(compaction, weight_width)
        super().__init__({
            "filter": In(stream.Signature(record_layout(fmt))),
            "inputs": In(stream.Signature(slab_layout(compaction, act_width, columns))),
            "outputs": Out(stream.Signature(tile_layout(acc_width, columns))),
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
    - ``enable`` (in): accumulate on this cycle; ``clear`` (in): with
      ``enable``, start new outputs (the accumulators ignore what they hold).
    """

    def __init__(self, compaction, weight_width, act_width, columns=EUREKA_COLUMNS):
        super().__init__({
            "weight": In(data.ArrayLayout(signed(weight_width), wire.ROWS)),
            "select": In(data.ArrayLayout(range(wire.ROWS * compaction), wire.ROWS)),
            "displaced": In(wire.ROWS),
            "operands": In(slab_layout(compaction, act_width, columns)),
            "enable": In(1),
            "clear": In(1),
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
