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
