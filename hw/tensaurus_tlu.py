# amaranth: UnusedElaboratable=no
"""The Tensaurus tensor load unit (Tensaurus Section 5.2.1, Fig. 5a): reads a CISS stream
one entry a cycle from a memory that answers out of order, and hands lane ``p`` of each
entry, in order, to row ``p`` of the PE array.

In its dense mode (Section 5.2.4: "the TLU reads the data in dense format, constructs a
CISS representation on the fly") it reads a dense tensor or matrix instead,
:func:`~sparseforge.sw.wire.tensaurus_dense_words`: one value of each of ``pes`` slices a
word, ``dw`` bits each, zeros included. It builds the CISS entries itself: each group of
``pes`` slices starts with a header entry (slice ``g * pes + p`` on lane ``p``, read from
no memory), then one entry a word, every lane at the same ``(j, k)``, counted ``k``
fastest over the start's ``jn x kn``. A zero read is a value, not a marker: the lanes
carry ``marker`` for that.

Reads go through a :class:`~sparseforge.hw.stream_units.Reorder` of ``tags`` slots:
entry ``n`` of a stream is tagged ``n % tags`` and read only once entry ``n - tags`` has
left its slot; a response fills its slot whenever it comes; the head entry leaves once it
is there and every row's queue has room. After the last entry each row gets the
end marker (an idle lane with ``last``), which tells its PEs to finish.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .interfaces import TaggedMemoryPortSignature, ciss_entry_layout, ciss_lane_layout
from .stream_units import Queue, Reorder


def tlu_start_layout(iw, addr_width):
    """A stream for the TLU: ``count`` words at ``base``; with ``dense``, dense words
    whose slice groups are ``jn x kn`` words each (``kn`` 1 for a matrix)."""
    return data.StructLayout({"base": addr_width, "count": addr_width, "dense": 1,
                              "jn": iw + 1, "kn": iw + 1})


class TluSignature(wiring.Signature):
    """A Tensaurus tensor load unit (Section 5.2.1), seen from it.

    - ``start`` (stream in, :func:`tlu_start_layout`): a stream of ``count`` words at
      ``base``, CISS entries or, with ``dense``, dense words of ``jn x kn`` a slice group;
      taken when the previous one has been sent whole.
    - ``mem`` (out, :class:`~.interfaces.TaggedMemoryPortSignature`): one entry a read, answered in
      any order.
    - ``lanes`` (``pes`` streams out, :func:`~.interfaces.ciss_lane_layout`): lane ``p`` of every
      entry in order, then the end marker (an idle lane with ``last``).
    """

    def __init__(self, pes, dw, iw, order, tags, addr_width):
        entry = ciss_entry_layout(pes, dw, iw, order)
        super().__init__({
            "start": In(stream.Signature(tlu_start_layout(iw, addr_width))),
            "mem": Out(TaggedMemoryPortSignature(addr_width, entry.size, ceil_log2(tags))),
            "lanes": Out(stream.Signature(ciss_lane_layout(dw, iw, order))).array(pes),
        })


@block("tensaurus_tlu")
class TensaurusTlu(wiring.Component):
    """The TLU: CISS entries from an out-of-order memory to the PE rows, in order.

    Parameters
    ----------
    pes : PE rows, lanes of an entry.
    dw, iw : bits of a value and of an index (the entry's layout).
    order : 3 for tensors, 2 for matrices (lanes without k).
    tags : reads in flight, the reorder buffer's entries (a power of two).
    addr_width : bits of an entry address and count.
    queue : items each row's queue holds (rows drift apart by up to this).

    Members
    -------
    start : In(stream({base, count}))
    mem : Out(TaggedMemoryPortSignature)
    lanes : Out(stream(ciss lane, last)) x pes
        As :class:`~sparseforge.hw.tensaurus_tlu.TluSignature` says.

    Latency and throughput: one read a cycle while fewer than ``tags`` entries wait for
    their turn; one entry a cycle to the rows while every row's queue has room. The end
    marker takes one cycle more.

    Clock: above 100 MHz in both report configurations (the synthesis report): whether
    every word is read and sent are registers, so the rows' valid waits on no compare,
    and so is the next read's address (no sum before a memory's lookup, the accelerator's
    Tailor's); the path left is the reorder buffer's own, into its head word's valid.
    """

    PARAMS = (Param("pes", 2, 1, 64, "PE rows (lanes of an entry)"),
              Param("dw", 16, 2, 32, "bits of a value"),
              Param("iw", 16, 1, 32, "bits of an index"),
              Param("order", 3, 2, 3, "tensor modes: 3, or 2 for matrices"),
              Param("tags", 8, 2, 256, "reads in flight (reorder buffer entries)", pow2=True),
              Param("addr_width", 24, 1, 40, "bits of an entry address"),
              Param("queue", 4, 2, 64, "items of each row's queue"))
    REPORT = ({}, {"pes": 8, "dw": 16, "iw": 16, "tags": 16})
    PAPER = "Table 2 (28 nm): TLU 0.009 mm2, 0.4%"

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.pes, self.dw, self.iw, self.order = v["pes"], v["dw"], v["iw"], v["order"]
        self.tags, self.addr_width, self.queue = v["tags"], v["addr_width"], v["queue"]
        self.entry = ciss_entry_layout(self.pes, self.dw, self.iw, self.order)
        self.idle = wire.CissWire(1, self.dw, self.iw, self.order).idle
        super().__init__(TluSignature(self.pes, self.dw, self.iw, self.order, self.tags,
                                      self.addr_width))

    def elaborate(self, platform):
        m = Module()
        A = self.addr_width
        busy = Signal()
        job = Signal(self.start.payload.shape())
        issued, head = Signal(A), Signal(A)          # words read, words sent
        at = Signal(A)                               # ``base + issued``: the next read's
        # ``issued == count`` and ``head == count`` as registers, set where the counts
        # move: no wide compare before the reads' and the rows' valid.
        read_all, sent_all = Signal(), Signal()

        # Start: a stream, once the previous one is sent whole.
        start = self.start
        m.d.comb += start.ready.eq(~busy)
        with m.If(start.valid & start.ready):
            empty = start.payload.count == 0
            m.d.sync += [busy.eq(1), job.eq(start.payload), issued.eq(0), head.eq(0),
                         at.eq(start.payload.base), read_all.eq(empty), sent_all.eq(empty)]

        # Reads: word ``issued`` in order, through the reorder buffer (its tags from 0 each
        # stream), whose head word is ``head``.
        m.submodules.rob = rob = Reorder(A, self.entry.size, self.tags)
        wiring.connect(m, rob.mem, wiring.flipped(self.mem))
        request, response = rob.port.request, rob.port.response
        m.d.comb += [rob.restart.eq(~busy), request.valid.eq(busy & ~read_all),
                     request.payload.eq(at)]
        with m.If(request.valid & request.ready):
            m.d.sync += [issued.eq(issued + 1), at.eq(at + 1),
                         read_all.eq(issued + 1 == job.count)]

        # The head word to every row's queue (after a dense group's header), then the
        # end marker.
        queues = [Queue(self.lanes[0].payload.shape(), depth=self.queue, latency=2)
                  for _ in range(self.pes)]
        room = 1
        for p, q in enumerate(queues):
            m.submodules[f"row{p}"] = q
            room &= q.i.ready
        w = self.iw                 # the dense mode's place: a group's header due, (j, k)
        dense = Signal(data.StructLayout({"due": 1, "j": w + 1, "k": w + 1, "group": w}),
                       name="dense")
        more = busy & room & ~sent_all
        header = more & job.dense & dense.due
        m.d.comb += response.ready.eq(more & ~header)
        sends = response.valid & response.ready
        ends = busy & room & sent_all
        self._walk(m, job, dense, busy, header, sends & job.dense)
        with m.If(sends):
            m.d.sync += [head.eq(head + 1), sent_all.eq(head + 1 == job.count)]
        with m.If(ends):
            m.d.sync += busy.eq(0)
        for p, q in enumerate(queues):
            m.d.comb += [q.i.valid.eq(sends | ends | header),
                         q.i.payload.eq(self._lane(m, p, job, response.payload, dense, header,
                                                   ends))]
            wiring.connect(m, q.o, wiring.flipped(self.lanes[p]))
        return m

    def _walk(self, m, job, dense, busy, header, sent):
        """The dense mode's place ``dense``: ``due`` (a slice group's header is next),
        ``j`` and ``k`` of the next word, ``group`` (the group's first slice); from the
        start, on to each ``header`` and word ``sent``."""
        with m.If(~busy):
            m.d.sync += [dense.due.eq(1), dense.j.eq(0), dense.k.eq(0), dense.group.eq(0)]
        with m.If(header):
            m.d.sync += dense.due.eq(0)
        with m.If(sent):
            with m.If(dense.k + 1 != job.kn):
                m.d.sync += dense.k.eq(dense.k + 1)
            with m.Elif(dense.j + 1 != job.jn):
                m.d.sync += [dense.k.eq(0), dense.j.eq(dense.j + 1)]
            with m.Else():
                m.d.sync += [dense.k.eq(0), dense.j.eq(0), dense.due.eq(1),
                             dense.group.eq(dense.group + self.pes)]

    def _lane(self, m, p, job, word, dense, header, ends):
        """Row ``p``'s item: the end marker, a dense group's header, lane ``p`` of a dense
        word (its value at the group's ``(j, k)``) or of a CISS entry."""
        lane = Signal(self.lanes[p].payload.shape(), name=f"lane{p}")
        entry = data.View(self.entry, word)
        m.d.comb += lane.last.eq(ends)
        with m.If(ends):
            m.d.comb += [lane.ij.eq(self.idle), lane.marker.eq(1)]
        with m.Elif(header):
            m.d.comb += [lane.ij.eq(dense.group + p), lane.marker.eq(1)]
        with m.Elif(job.dense):
            m.d.comb += [lane.nnz.eq(word[p * self.dw:(p + 1) * self.dw]),
                         lane.ij.eq(dense.j)]
            if self.order == 3:
                m.d.comb += lane.k.eq(dense.k)
        with m.Else():
            m.d.comb += [lane.nnz.eq(entry[p].nnz), lane.ij.eq(entry[p].ij),
                         lane.marker.eq(entry[p].nnz == 0)]
            if self.order == 3:
                m.d.comb += lane.k.eq(entry[p].k)
        return lane
