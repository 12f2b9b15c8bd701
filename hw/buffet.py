"""The Buffet storage idiom (Pellauer et al., ASPLOS 2019; Tailors paper §3.2)."""

from amaranth.hdl import C, Cat, Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory, ReadPort
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..core.params import Param, check_params
from ..core.registry import block
from .interfaces import BuffetSignature


class ReadStage(wiring.Component):
    """The read pipeline of a buffet-like store: request in, data out of one memory read port.

    ``present`` says the element ``read`` asks for is in the store and
    ``addr`` is its memory address (both from the owner, who decodes the
    request's index). ``accepted`` pulses on the cycle a read is accepted; its
    data appears on ``read_data`` ``latency`` cycles later at the earliest.
    Reads sustain one per cycle; back-pressure on ``read_data`` holds the
    pipeline, each stage holding its read until the next stage frees.

    ``latency`` 1: ``mem`` is a synchronous read port, transparent to the
    owner's write port, so a read sees the write of its own cycle; its data
    reaches ``read_data`` through the transparency logic.

    ``latency`` 2: ``mem`` is an asynchronous port (address out, data in),
    read into a register that Yosys merges into the block RAM, then into an
    output register. That register takes the memory's data on every cycle it
    is free, whether a read is accepted or not, so the block RAM's enable
    waits for no lookup of the owner's. A collision with a write is the
    owner's to tell: ``hit`` says a write the RAM has not taken before the
    read's cycle writes its element, with ``hit_data``, which replaces the
    data after the output register. So the block RAM's data out goes straight
    into a register, and the memory is marked ``no_rw_check`` (see
    :meth:`memory`): Yosys builds no collision logic of its own.
    """

    def __init__(self, depth, width, index, latency=1):
        self.latency = latency
        abits = ceil_log2(depth)
        if latency == 1:
            mem = In(ReadPort.Signature(addr_width=abits, shape=width))
        else:
            mem = In(wiring.Signature({"addr": In(abits), "data": Out(width)}))
        members = {
            "read": In(stream.Signature(index)),
            "read_data": Out(stream.Signature(width)),
            "present": In(1),
            "addr": In(range(depth)),
            "mem": mem,
            "accepted": Out(1),
        }
        if latency == 2:
            members |= {"hit": In(1), "hit_data": In(width)}
        super().__init__(members)

    def memory(self, depth):
        """A ``Memory`` of ``depth`` elements for this stage to read."""
        attrs = {"no_rw_check": 1} if self.latency == 2 else None
        return Memory(shape=len(self.read_data.payload), depth=depth, init=[], attrs=attrs)

    def connect_memory(self, m, store, write_port):
        """Give ``mem`` a read port of ``store`` (written through ``write_port``), in ``m``."""
        if self.latency == 1:
            wiring.connect(m, self.mem, store.read_port(transparent_for=(write_port,)))
        else:
            port = store.read_port(domain="comb")
            m.d.comb += [port.addr.eq(self.mem.addr), self.mem.data.eq(port.data)]

    def elaborate(self, platform):
        m = Module()
        fetched = Signal()      # a read's data is on the memory's output
        frees = Signal()        # the memory's output is free for a read this cycle
        m.d.comb += [
            self.read.ready.eq(frees & self.present),
            self.accepted.eq(self.read.valid & self.read.ready),
            self.mem.addr.eq(self.addr),
        ]
        if self.latency == 1:
            m.d.comb += [self.mem.en.eq(self.accepted),
                         frees.eq(~fetched | self.read_data.ready),
                         self.read_data.valid.eq(fetched),
                         self.read_data.payload.eq(self.mem.data)]
            m.d.sync += fetched.eq(self.accepted | (fetched & ~self.read_data.ready))
            return m

        width = len(self.read_data.payload)
        data = Signal(width)                             # the fetched read's data,
        hit = Signal()                                   # whether an update in flight
        hit_data = Signal(width)                         # hits it, and that update's data
        held = Signal()                                  # ``out`` holds a read: its
        out = Signal(width)                              # data, hit and hit data
        out_hit = Signal()
        out_hit_data = Signal(width)
        advance = Signal()                               # the fetched read moves to ``out``
        m.d.comb += [
            advance.eq(fetched & (~held | self.read_data.ready)),
            frees.eq(~fetched | advance),
            self.read_data.valid.eq(held),
            self.read_data.payload.eq(Mux(out_hit, out_hit_data, out)),
        ]
        m.d.sync += [fetched.eq(self.accepted | (fetched & ~advance)),
                     held.eq(advance | (held & ~self.read_data.ready))]
        with m.If(frees):
            m.d.sync += [data.eq(self.mem.data), hit.eq(self.hit), hit_data.eq(self.hit_data)]
        with m.If(advance):
            m.d.sync += [out.eq(data), out_hit.eq(hit), out_hit_data.eq(hit_data)]
        return m


@block("buffet")
class Buffet(wiring.Component):
    """A buffet: a queue with random reads and updates relative to its head.

    Parameters
    ----------
    depth : capacity in elements (a power of two, so pointers wrap for free).
    width : element width in bits.
    read_latency : cycles from an accepted read to its data, 1 or 2 (default 2,
        the faster; see below).

    Members
    -------
    parent : Out(BuffetParentSignature)
        The producer's side (:class:`~sparseforge.hw.interfaces.BuffetParentSignature`).

        ``fill`` : In(stream(width))
            Appends the payload at the tail. Not ready while full: a full buffet
            exerts back-pressure.
        ``credit`` : Out(count)
            Credits returned to the parent on this cycle (the count of the shrink
            accepted on the previous cycle, else 0). A parent that starts with
            ``depth`` credits and spends one per fill never overruns the buffet.
    child : Out(BuffetChildSignature)
        The consumer's side (:class:`~sparseforge.hw.interfaces.BuffetChildSignature`).

        ``read`` : In(stream(index))
            Read request: the element ``index`` places from the head. Not ready
            until that element has been filled, so a read never returns stale data.
        ``read_data`` : Out(stream(width))
            Read responses, in request order, ``read_latency`` cycles after the
            request at the earliest; back-pressure on it holds the read pipeline.
        ``shrink`` : In(stream(count))
            Frees ``count`` elements from the head; not ready while ``count``
            exceeds the occupancy.
        ``occupancy`` : Out(count)
            Elements held, exact at full and at empty.
    update : In(stream({index, data}))
        The child's write back: overwrites the element ``index`` places from the
        head; not ready until that element has been filled. Takes the write port
        from fill for a cycle.

    Concurrency: on one cycle the buffet accepts a fill or an update (they
    share the memory's single write port; update has priority), a read and a
    shrink. Each uses the state at the start of the cycle; a read of the
    element updated on the same cycle returns the new data.

    Latency and throughput: one fill and one read per cycle sustained, at
    either latency (the pipeline holds ``read_latency`` reads, so a stalled
    ``read_data`` costs no bubble once it resumes). Storage is one ``Memory``
    with one write and one read port, so it maps to block RAM; every carry
    chain (occupancy, its successor and their differences with a shrink's
    count; head plus an index) starts at a register.

    Timing: the write reaches the block RAM from registers (the read of an
    element being written takes the write's data: ``hit``, the write matched
    by its index from the read's head, so no sum of the head and the read's
    index comes before the compare), the read's second register is the RAM's
    own output register (the flow folds it in: :mod:`sparseforge.synth.outreg`),
    and no carry chain follows another: the successor after a shrink and a
    fill, ``occupancy + 1 - count``, is one chain after a carry-save layer
    (:func:`plus_one_minus`). The critical path runs from the occupancy
    through the update's and the shrink's compares into the registered
    write's index. At ``read_latency=1`` it is the block RAM's
    data out -> the transparency multiplexer Yosys builds for the
    read-during-write -> output. The synthesis report gives the clock
    (``sparseforge synth buffet -p depth=1024 -p width=32``).
    """

    PARAMS = (
        Param("depth", 64, 2, 1 << 16, "capacity in elements", pow2=True),
        Param("width", 32, 1, 1024, "element width in bits"),
        Param("read_latency", 2, 1, 2, "cycles from a read request to its data"),
    )

    # Configurations in the synthesis report.
    REPORT = ({"depth": 64, "width": 32}, {"depth": 1024, "width": 32})

    def __init__(self, **params):
        values = check_params(self.PARAMS, params)
        self.depth, self.width = values["depth"], values["width"]
        self.latency = values["read_latency"]
        super().__init__(BuffetSignature(self.depth, self.width))

    def elaborate(self, platform):
        m = Module()
        parent, child = self.parent, self.child
        mask = self.depth - 1
        reads = ReadStage(self.depth, self.width, len(child.read.payload), self.latency)
        m.submodules.read_stage = reads
        m.submodules.store = store = reads.memory(self.depth)
        wr = store.write_port()
        reads.connect_memory(m, store, wr)

        # Registered state. ``occupancy + 1`` is kept beside ``occupancy`` and ``tail``
        # beside ``head`` so that every carry chain starts at a register: none waits
        # for a handshake (see the shrink below).
        head = Signal(range(self.depth))
        tail = Signal(range(self.depth))
        occupancy = Signal(range(self.depth + 1))
        occupancy_up = Signal(range(self.depth + 2), init=1)
        full = occupancy[-1]                  # the depth is the only count with its top bit
        m.d.comb += child.occupancy.eq(occupancy)

        # Write port: update has priority over fill.
        do_update = Signal()
        do_fill = Signal()
        m.d.comb += [
            self.update.ready.eq(self.update.payload.index < occupancy),
            do_update.eq(self.update.valid & self.update.ready),
            # Gate fill on an accepted update only: an update waiting for its
            # element must not block the fill that brings it.
            parent.fill.ready.eq(~full & ~do_update),
            do_fill.eq(parent.fill.valid & parent.fill.ready),
        ]
        # At read latency 2 the write reaches the block RAM a cycle later, from
        # registers: the decision to write (a compare with the occupancy, the
        # fill/update choice) and the RAM's setup are not on one cycle.
        w_en = Signal()
        w_addr = Signal(range(self.depth))
        w_data = Signal(self.width)
        domain = m.d.sync if self.latency == 2 else m.d.comb
        domain += [
            w_en.eq(do_fill | do_update),
            w_addr.eq(Mux(do_update, head + self.update.payload.index, tail)),
            w_data.eq(Mux(do_update, self.update.payload.data, parent.fill.payload)),
        ]
        m.d.comb += [wr.en.eq(w_en), wr.addr.eq(w_addr), wr.data.eq(w_data)]

        # Shrink frees from the head and returns its count as credits.
        count = child.shrink.payload
        do_shrink, kept = self._occupancy(m, occupancy, occupancy_up, do_fill)

        wiring.connect(m, wiring.flipped(child.read), reads.read)
        wiring.connect(m, reads.read_data, wiring.flipped(child.read_data))
        m.d.comb += [reads.present.eq(child.read.payload < occupancy),
                     reads.addr.eq(head + child.read.payload)]
        if self.latency == 2:
            # A read's element may be written on its cycle (by an update: a fill's is
            # absent) or be the registered write the RAM takes on it; the newer wins.
            # The registered write is matched by its index from the next cycle's head
            # (``w_index``, its offset less this cycle's shrink), so the compare waits
            # for no sum of the head and the read's index.
            w_index = Signal(range(self.depth))
            index = self.update.payload.index
            m.d.sync += w_index.eq(Mux(do_shrink, Mux(do_update, index - count, kept),
                                       Mux(do_update, index, occupancy)))
            now = do_update & (index == child.read.payload)
            m.d.comb += [reads.hit.eq(now | w_en & (w_index == child.read.payload)),
                         reads.hit_data.eq(Mux(now, self.update.payload.data, w_data))]

        m.d.sync += [
            head.eq(Mux(do_shrink, head + count, head) & mask),
            tail.eq(Mux(do_fill, tail + 1, tail) & mask),
            parent.credit.eq(Mux(do_shrink, count, 0)),
        ]
        return m

    def _occupancy(self, m, occupancy, occupancy_up, do_fill):
        """The next ``occupancy`` and ``occupancy + 1``; returns whether a shrink is
        accepted and ``occupancy - count``.

        Each is picked from sums over registers, for each outcome of the shrink
        and the fill, each one carry chain; the borrow of one is the shrink's ready.
        """
        shrink = self.child.shrink
        count = shrink.payload
        kept = Signal(signed(len(occupancy) + 1))
        # Taken only with a fill, so never negative and never beyond depth + 1.
        kept_up = Signal.like(occupancy_up)
        kept_up2 = Signal.like(occupancy_up)
        occupancy_up2 = Signal.like(occupancy_up)
        do_shrink = Signal()
        m.d.comb += [
            occupancy_up2.eq(occupancy_up + 1),
            kept.eq(occupancy - count),
            kept_up.eq(occupancy_up - count),
            kept_up2.eq(plus_one_minus(occupancy_up, count)),
            shrink.ready.eq(kept >= 0),
            do_shrink.eq(shrink.valid & shrink.ready),
        ]
        m.d.sync += [
            occupancy.eq(Mux(do_shrink, Mux(do_fill, kept_up, kept),
                             Mux(do_fill, occupancy_up, occupancy))),
            occupancy_up.eq(Mux(do_shrink, Mux(do_fill, kept_up2, kept_up),
                                Mux(do_fill, occupancy_up2, occupancy_up))),
        ]
        return do_shrink, kept


def plus_one_minus(a, c):
    """``a + 1 - c`` in one carry chain, as ``a + ~c + 2``: a carry-save layer (a LUT a
    bit) takes the three operands to two. As ``(a + 1) - c`` it would be two carry
    chains in series. The result has ``a``'s width (modulo its range)."""
    n = len(a)
    c = c.as_unsigned() | C(0, n)               # zero-extended: ~c is ones above it
    total = Cat(~(a[0] ^ c[0]), a[1] ^ c[1], *(~(a[i] ^ c[i]) for i in range(2, n)))
    majority = [a[0] & ~c[0], a[1] | ~c[1], *(a[i] & ~c[i] for i in range(2, n))]
    return total + Cat(C(0, 1), *majority[:n - 1])
