"""The accelerator's one AXI4 master: its memory ports mapped onto AXI4 bursts and IDs.

The units speak three memory ports: tagged reads
(:class:`~sparseforge.hw.interfaces.TaggedMemoryPortSignature`, the TLU's and MLU's),
in-order reads (:class:`~sparseforge.hw.stream_units.MemoryPortSignature`, the MSU's
direct mode) and posted writes
(:class:`~sparseforge.hw.interfaces.MemoryWritePortSignature`, the MSU's write-back).
Their addresses count words of the port's own width; a word lives in memory as
:func:`~sparseforge.sw.wire.word_bytes` says (its bytes rounded up to a power of two,
aligned) and crosses the bus as :func:`~sparseforge.sw.wire.word_beats` says: one beat,
on its byte lanes, when it is no wider than the bus, else an INCR burst of
``ceil(word / data)`` full beats.

- :class:`ReadBridge`: a tagged port onto AR/R, the tag as ARID.
- An in-order port is a :class:`~sparseforge.hw.stream_units.Reorder` before a
  :class:`ReadBridge`: its reads take the IDs in turn and the reorder buffer puts the
  answers back in order, so the memory may answer them out of order (a DRAM controller
  serving open rows first) rather than one ID forcing its order.
- :class:`WriteBridge`: a write port onto AW/W/B, one ID, so its writes land in order.
- :class:`ReadFence`: an in-order port whose reads wait for a write port's earlier writes
  to land (their B answers), where a unit reads back what another wrote.
- :class:`TaggedMux`, :class:`WriteMux`: several ports, each of its own width, onto
  one, a read port's index in the upper tag bits, which become the upper ARID bits, a
  write port's above the word address; the bridges after them choose each port's
  burst, size and lanes by that index.
- :class:`AxiMaster`: all of it behind one master, its pins standard-named.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2, exact_log2

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from .axi import (
    BURST_INCR,
    MAX_BEATS,
    OKAY,
    AxiReadSignature,
    AxiSignature,
    AxiWriteSignature,
    Pinout,
    pins,
)
from .interfaces import MemoryWritePortSignature, TaggedMemoryPortSignature
from .stream_units import MemoryPortSignature, Queue, Reorder, RoundRobin, Skid, any_of


class _Word:
    """How a word of ``width`` bits at word addresses of ``addr_width`` bits crosses a bus
    of ``data_width`` bits at byte addresses of ``axi_addr_width`` bits."""

    def __init__(self, addr_width, width, axi_addr_width, data_width):
        self.width, self.data_width = width, data_width
        self.beats, self.size = wire.word_beats(width, data_width)
        self.shift = wire.word_shift(width)
        self.lanes = max(data_width // 8 >> self.shift, 1)        # words a beat holds
        self.lane_bits = exact_log2(self.lanes)
        if addr_width + self.shift > axi_addr_width:
            raise ParameterError(f"addr_width={addr_width}: words of {width} bits take "
                                 f"{addr_width + self.shift} byte-address bits, more than "
                                 f"the bus's {axi_addr_width}")
        if self.beats > MAX_BEATS:
            raise ParameterError(f"word={width}: {self.beats} beats of {data_width} bits, "
                                 f"more than an AXI4 burst's {MAX_BEATS}")


class _Words:
    """The words of the ports behind one bridge (``word``: one width for all, or one a
    port): a :class:`_Word` for each width (a kind), the kind of a port numbered by a
    value (:meth:`of`), and what differs between kinds chosen by it (:meth:`pick`). With
    one kind nothing is chosen: no logic, the port's number unused, the bridge as it is
    for one width."""

    def __init__(self, addr_width, word, axi_addr_width, data_width):
        widths = (word,) if isinstance(word, int) else tuple(word)
        kinds = sorted(set(widths))
        self.kinds = [_Word(addr_width, w, axi_addr_width, data_width) for w in kinds]
        self.kind = [kinds.index(w) for w in widths]        # each port's
        self.width = kinds[-1]
        self.port_bits, self.kind_bits = ceil_log2(len(widths)), ceil_log2(len(kinds))
        self.beats = max(w.beats for w in self.kinds)
        self.lane_bits = max(w.lane_bits for w in self.kinds)

    def of(self, port):
        """The kind of the port numbered ``port`` (a value)."""
        return Array(Const(k, self.kind_bits) for k in self.kind)[port]

    def slot(self, kind, id_, own):
        """``(address, depth)`` of ID ``id_``'s slot in the buffer of kind ``kind``: the
        kind's ports' tags only (the tag's ``own`` low bits, above them the port's place
        among the kind's), so a wide word's buffer is as deep as its own reads in flight."""
        ports = [p for p, k in enumerate(self.kind) if k == kind]
        bits = ceil_log2(len(ports))
        if ports == list(range(len(ports))):    # each place is the port's number
            place = id_[own:own + bits]
        else:
            place = Array(Const(ports.index(p) if k == kind else 0, bits)
                          for p, k in enumerate(self.kind))[id_[own:]]
        return Cat(id_[:own], place), len(ports) << own

    def pick(self, kind, values):
        """``values[kind]``, a value for each kind."""
        values = [Const(v) if isinstance(v, int) else v for v in values]
        return values[0] if len(values) == 1 else Array(values)[kind]

    def address(self, m, channel, addr, id_, kind):
        """Drive address channel ``channel``'s payload for the word of kind ``kind`` at
        ``addr``."""
        m.d.comb += [channel.payload.id.eq(id_),
                     channel.payload.addr.eq(self.pick(kind, [addr << w.shift
                                                              for w in self.kinds])),
                     channel.payload.len.eq(self.pick(kind, [w.beats - 1 for w in self.kinds])),
                     channel.payload.size.eq(self.pick(kind, [w.size for w in self.kinds])),
                     channel.payload.burst.eq(BURST_INCR)]


def _ports(name, signatures):
    """Members ``name__0``, ``name__1``, ... of ``signatures``, each port its own (its own
    width): named as the elements of an array of ports are once flattened
    (``name__0__request__valid``). :func:`_listed` gives them back as a list."""
    return {f"{name}__{k}": In(s) for k, s in enumerate(signatures)}


def _listed(component, name, n):
    """The members ``name__0`` ... ``name__{n-1}`` of ``component``, as a list."""
    return [getattr(component, f"{name}__{k}") for k in range(n)]


class ReadBridge(wiring.Component):
    """A tagged read port onto the read channels of AXI4, its words of one width or of a
    width for each of the ports a :class:`TaggedMux` puts before it.

    A read ``{addr, tag}`` is one AR, ARID its tag: a burst of ``ceil(word / data)`` beats
    at the word's byte address (one narrow beat when the word fits the bus), ``word`` the
    width of the port the tag names. The beats of different IDs may come interleaved:
    each ID's beats but the last shift into its own slot of a buffer (one slot a tag), and
    its last beat, with the slot, is the response ``{tag, data}``. Each width of several
    beats has its buffer, a slot for each tag of the ports of that width alone (the
    others' beats are not written in it), so a wide word's buffer is as deep as its own
    reads in flight. R is held back while the port's ``response.ready`` is low (a
    :class:`TaggedMux`'s waits on its registers alone, so RREADY crosses no path from
    the bus). A narrow word's byte lanes, from its address, wait in a slot of their own.

    Parameters
    ----------
    addr_width, tag_width : the port's word address and tag bits.
    word : bits of a word; or a sequence of them, one for each port, the port numbered by
        the tag's upper ``ceil_log2(len(word))`` bits.
    axi_addr_width, data_width : the bus's.

    Members
    -------
    port : In(TaggedMemoryPortSignature(addr_width, widest word, tag_width))
        A narrower word is the low bits of its response's data.
    axi : Out(AxiReadSignature(axi_addr_width, data_width, tag_width))
    error : Out(1)
        Set (and kept) by a beat whose RRESP is not OKAY; its data is answered anyway.

    Latency: a cycle from a request to its AR (a register slice on the request); a last
    beat is its response in the same cycle, R's ready the response's, so the one R beat
    fans out to no register here: a :class:`TaggedMux` before the bridge registers each
    port's responses apart. One request and one beat a cycle.
    """

    def __init__(self, addr_width, word, tag_width, axi_addr_width, data_width):
        self.word = _Words(addr_width, word, axi_addr_width, data_width)
        super().__init__({
            "port": In(TaggedMemoryPortSignature(addr_width, self.word.width, tag_width)),
            "axi": Out(AxiReadSignature(axi_addr_width, data_width, tag_width)),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        words, response = self.word, self.port.response
        m.submodules.request = request = Skid(self.port.request.payload.shape())
        wiring.connect(m, wiring.flipped(self.port.request), request.i)
        request, r, ar = request.o, self.axi.r, self.axi.ar
        beats = r.valid & r.ready
        tag, own = request.payload.tag, len(request.payload.tag) - words.port_bits
        tags = 1 << len(tag)
        words.address(m, ar, request.payload.addr, tag, words.of(tag[own:]))
        m.d.comb += [ar.valid.eq(request.valid), request.ready.eq(ar.ready)]

        beat, kind = r.payload.data, words.of(r.payload.id[own:])
        if words.lane_bits:                 # narrow words: their lanes, kept from the AR
            m.submodules.lanes = lanes = Memory(shape=words.lane_bits, depth=tags, init=[])
            lane, keep = lanes.read_port(domain="comb"), lanes.write_port()
            m.d.comb += [keep.addr.eq(tag), keep.data.eq(request.payload.addr[:words.lane_bits]),
                         keep.en.eq(ar.valid & ar.ready), lane.addr.eq(r.payload.id)]
        values = []
        for k, word in enumerate(words.kinds):
            value = beat
            if word.beats > 1:              # the earlier beats, in their tag's slot
                at, depth = words.slot(k, r.payload.id, own)
                m.submodules[f"slots{k}"] = slots = Memory(
                    shape=(word.beats - 1) * word.data_width, depth=depth, init=[])
                held, keep = slots.read_port(domain="comb"), slots.write_port()
                m.d.comb += [held.addr.eq(at), keep.addr.eq(at),
                             keep.data.eq(Cat(held.data[word.data_width:], beat)),
                             keep.en.eq(beats & ~r.payload.last & (kind == k))]
                value = Cat(held.data, beat)
            elif word.lanes > 1:
                value = Array(beat.word_select(i, 8 << word.shift)
                              for i in range(word.lanes))[lane.data[:word.lane_bits]]
            values.append(value[:word.width])
        m.d.comb += [response.payload.tag.eq(r.payload.id),
                     response.payload.data.eq(words.pick(kind, values)),
                     response.valid.eq(r.valid & r.payload.last),
                     r.ready.eq(response.ready)]
        with m.If(beats & (r.payload.resp != OKAY)):
            m.d.sync += self.error.eq(1)
        return m


class WriteBridge(wiring.Component):
    """A posted write port onto the write channels of AXI4, its words of one width or of a
    width for each of the ports a :class:`WriteMux` puts before it.

    A write ``{addr, data}`` is one AW (AWID ``0``, a burst of ``ceil(word / data)``
    beats at the word's byte address, as :class:`ReadBridge`'s) and its beats on W, every
    strobe set (a narrow word: the strobes of its bytes, the word on every lane). The
    write is taken once the address queue and the word queue (``words`` each) both have
    room; then AW leaves as the slave takes it and W as the slave takes its beats, so
    either runs up to ``words`` writes ahead of the other. One ID, so the writes land in
    the order they were taken, as the port promises.

    Parameters
    ----------
    addr_width : the port's word address bits.
    word : bits of a word; or a sequence of them, one for each port, the port numbered by
        ``ceil_log2(len(word))`` address bits above the word address.
    axi_addr_width, data_width : the bus's.
    outstanding : writes taken and not yet answered on B, at most; more wait.
    words : words the queue before W holds (at least 2).

    Members
    -------
    port : In(MemoryWritePortSignature(addr_width + port bits, widest word))
        A narrower word is the low bits of the data.
    axi : Out(AxiWriteSignature(axi_addr_width, data_width, 1))
    idle : Out(1)
        Every write taken has been answered on B: all have landed. A register (no path
        from the count into the idle's reader), so it rises a cycle after the last answer.
    error : Out(1)
        Set (and kept) by a B whose BRESP is not OKAY or whose BID is not 0.
    landing : Out(:class:`LandingSignature`)
        The writes in flight and the B answers, for :class:`ReadFence` s.

    Throughput: a beat a cycle on W, one write every ``ceil(word / data)`` cycles.
    """

    def __init__(self, addr_width, word, axi_addr_width, data_width, outstanding=16,
                 words=4):
        self.word = _Words(addr_width, word, axi_addr_width, data_width)
        self.addr_width, self.outstanding, self.words = addr_width, outstanding, words
        super().__init__({
            "port": In(MemoryWritePortSignature(addr_width + self.word.port_bits,
                                                self.word.width)),
            "axi": Out(AxiWriteSignature(axi_addr_width, data_width, 1)),
            "idle": Out(1),
            "error": Out(1),
            "landing": Out(LandingSignature(outstanding)),
        })

    def elaborate(self, platform):
        m = Module()
        words, request, axi = self.word, self.port.request, self.axi
        addr = request.payload.addr[:self.addr_width]
        kind = words.of(request.payload.addr[self.addr_width:])
        m.submodules.aw = aw = Queue(data.StructLayout({"addr": self.addr_width,
                                                        "kind": words.kind_bits}),
                                     depth=self.words, latency=1)
        item = data.StructLayout({"data": words.width, "lane": words.lane_bits,
                                  "kind": words.kind_bits})
        m.submodules.queue = queue = Queue(item, depth=self.words, latency=1)
        words.address(m, axi.aw, aw.o.payload.addr, 0, aw.o.payload.kind)
        m.d.comb += [axi.aw.valid.eq(aw.o.valid), aw.o.ready.eq(axi.aw.ready)]

        pending = Signal(range(self.outstanding + 1))
        room = pending != self.outstanding
        m.d.comb += [aw.i.payload.addr.eq(addr), aw.i.payload.kind.eq(kind),
                     queue.i.payload.data.eq(request.payload.data),
                     queue.i.payload.lane.eq(addr[:words.lane_bits]),
                     queue.i.payload.kind.eq(kind),
                     aw.i.valid.eq(request.valid & queue.i.ready & room),
                     queue.i.valid.eq(request.valid & aw.i.ready & room),
                     request.ready.eq(aw.i.ready & queue.i.ready & room)]

        # W: the head word's beats
        w, head = axi.w, queue.o.payload
        beat = Signal(range(words.beats))
        last = beat == words.pick(head.kind, [word.beats - 1 for word in words.kinds])
        beats, strobes = [], []
        every = Const(-1, len(w.payload.strb))
        for word in words.kinds:
            if word.lanes > 1:
                container, mine = 8 << word.shift, (1 << (1 << word.shift)) - 1
                beats.append(Cat(head.data[:word.width], Const(0, container - word.width))
                             .replicate(word.lanes))
                strobes.append(Array(Const(mine << (i << word.shift), len(every))
                                     for i in range(word.lanes))[head.lane[:word.lane_bits]])
            else:
                padded = Cat(head.data[:word.width],
                             Const(0, word.beats * word.data_width - word.width))
                beats.append(Array(padded.word_select(i, word.data_width)
                                   for i in range(word.beats))[beat])
                strobes.append(every)
        m.d.comb += [w.payload.data.eq(words.pick(head.kind, beats)),
                     w.payload.strb.eq(words.pick(head.kind, strobes)),
                     w.payload.last.eq(last), w.valid.eq(queue.o.valid),
                     queue.o.ready.eq(w.ready & last)]
        with m.If(w.valid & w.ready):
            m.d.sync += beat.eq(Mux(last, 0, beat + 1))

        b = axi.b
        sent, answered = request.valid & request.ready, b.valid & b.ready
        quiet = Signal(init=1)              # none pending, none taken: no write next cycle
        m.d.comb += [b.ready.eq(1), self.idle.eq(quiet),
                     self.landing.pending.eq(pending), self.landing.answered.eq(answered)]
        m.d.sync += [pending.eq(pending + sent - answered), quiet.eq((pending == 0) & ~sent)]
        with m.If(answered & ((b.payload.resp != OKAY) | (b.payload.id != 0))):
            m.d.sync += self.error.eq(1)
        return m


class LandingSignature(wiring.Signature):
    """How a :class:`WriteBridge`'s writes land, from the bridge: ``pending``, the writes
    taken and not yet answered on B (up to ``outstanding``), and ``answered``, a B
    answer this cycle. One ID, so the answers come in the order the writes were taken."""

    def __init__(self, outstanding):
        super().__init__({"pending": Out(range(outstanding + 1)), "answered": Out(1)})


class ReadFence(wiring.Component):
    """An in-order read port whose reads see the writes of one write port (the watched
    port): a read waits until the watched port's writes taken before it have landed.

    AXI orders no read after a write (the write's B answer says it landed), and a
    :class:`WriteBridge` queues writes before the bus, so without this a read of what a
    posted write just wrote may overtake it. Two counts of B answers still to come, from
    the bridge's ``landing``: ``latest``, until the watched port's latest write has
    landed (set as it is taken: the writes then in flight, its own among them, in order);
    and, for a read offered while ``latest`` is not zero, ``before``, until every write
    taken before that read has landed (the writes in flight then). A read goes once
    either reaches zero: at once where the watched port has nothing in flight, and
    within the answers of the writes already taken (not every later one's) while it
    keeps writing. A read offered stays offered until taken.

    Members
    -------
    port : In(MemoryPortSignature(addr_width, data_width)); mem : Out(the same).
    watched : In(1), a write of the watched port taken this cycle.
    landing : In(:class:`LandingSignature`), the bridge's.
    """

    def __init__(self, addr_width, data_width, outstanding):
        super().__init__({"port": In(MemoryPortSignature(addr_width, data_width)),
                          "mem": Out(MemoryPortSignature(addr_width, data_width)),
                          "watched": In(1),
                          "landing": In(LandingSignature(outstanding))})

    def elaborate(self, platform):
        m = Module()
        port, mem, landing = self.port.request, self.mem.request, self.landing
        count = len(landing.pending)
        latest, before = Signal(count), Signal(count)
        armed, offered = Signal(), Signal()
        go = (latest == 0) | (armed & (before == 0)) | offered
        m.d.comb += [mem.payload.eq(port.payload), mem.valid.eq(port.valid & go),
                     port.ready.eq(mem.ready & go),
                     self.port.response.valid.eq(self.mem.response.valid),
                     self.port.response.payload.eq(self.mem.response.payload),
                     self.mem.response.ready.eq(self.port.response.ready)]
        landed = landing.answered
        with m.If(self.watched):
            m.d.sync += latest.eq(landing.pending + 1 - landed)
        with m.Elif(latest != 0):
            m.d.sync += latest.eq(latest - landed)
        with m.If(mem.valid & mem.ready):
            m.d.sync += armed.eq(0)
        with m.Elif(port.valid & ~armed & ~go):
            m.d.sync += [armed.eq(1), before.eq(landing.pending - landed)]
        with m.Elif(before != 0):
            m.d.sync += before.eq(before - landed)
        m.d.sync += offered.eq(mem.valid & ~mem.ready)
        return m


class Merge(wiring.Component):
    """Round robin over ``n`` streams of ``layout``: ``o`` is ``{item, port}``, the granted
    stream's item and its index. A stream is granted only while ``o.ready``, so a grant
    is always taken; ``o`` is combinational (a register slice follows it)."""

    def __init__(self, n, layout):
        self.n = n
        super().__init__({
            "i": In(stream.Signature(layout)).array(n),
            "o": Out(stream.Signature(data.StructLayout({"item": layout,
                                                         "port": ceil_log2(n)}))),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.grant = rr = RoundRobin(n=self.n)
        m.d.comb += [rr.requests.eq(Cat(i.valid for i in self.i)
                                    & self.o.ready.replicate(self.n)),
                     self.o.valid.eq(rr.grant.any())]
        for k, i in enumerate(self.i):
            m.d.comb += i.ready.eq(rr.grant[k])
            with m.If(rr.grant[k]):
                m.d.comb += [self.o.payload.item.eq(i.payload), self.o.payload.port.eq(k)]
        return m


def _each(n, word):
    """The widths of ``n`` ports: ``word`` for each, or ``word``'s own, one a port."""
    widths = (word,) * n if isinstance(word, int) else tuple(word)
    if len(widths) != n:
        raise ParameterError(f"word={widths}: {len(widths)} widths for {n} ports")
    return widths


class TaggedMux(wiring.Component):
    """``n`` tagged read ports onto one whose tags carry the port's index above the
    port's own: requests by round robin, each response to the port its tag names.

    ``word`` is the ports' width, or a sequence of widths, one a port: the one port after
    carries the widest, and each port takes the low bits of its responses' data (a
    :class:`ReadBridge` of the same widths answers each tag with its port's word).

    Each port's responses pass a register slice of its own
    (:class:`~sparseforge.hw.stream_units.Skid`), a cycle: one register a port, placed
    beside its reader, rather than one for all the ports that a part as large as the
    accelerator's spreads far apart. ``mem.response.ready`` is low while a port's slice
    holds a response aside (its reader stalled, and a second response came), so it comes
    from registers alone.

    Members
    -------
    ports : list of In(TaggedMemoryPortSignature(addr_width, port's word, tag_width))
        Also the members ``ports__0`` ... (see :func:`_ports`).
    mem : Out(TaggedMemoryPortSignature(addr_width, widest word, tag_width + ceil_log2(n)))
    error : Out(1)
        Set (and kept) by a response whose tag names no port (a slave's ID error).
    """

    def __init__(self, n, addr_width, word, tag_width):
        widths = _each(n, word)
        self.n, self.tag_width = n, tag_width
        super().__init__({
            **_ports("ports", (TaggedMemoryPortSignature(addr_width, w, tag_width)
                               for w in widths)),
            "mem": Out(TaggedMemoryPortSignature(addr_width, max(widths),
                                                 tag_width + ceil_log2(n))),
            "error": Out(1),
        })
        self.ports = _listed(self, "ports", n)

    def elaborate(self, platform):
        m = Module()
        ports, request = self.ports, self.mem.request
        m.submodules.merge = merge = Merge(self.n, ports[0].request.payload.shape())
        for k, port in enumerate(ports):
            wiring.connect(m, wiring.flipped(port.request), merge.i[k])
        chosen = merge.o.payload
        m.d.comb += [request.payload.addr.eq(chosen.item.addr),
                     request.payload.tag.eq(Cat(chosen.item.tag, chosen.port)),
                     request.valid.eq(merge.o.valid), merge.o.ready.eq(request.ready)]

        response, tag = self.mem.response, self.mem.response.payload.tag
        which = tag[self.tag_width:]
        taken = response.valid & response.ready
        stray = response.valid & (which >= self.n)
        held = []
        for k, sink in enumerate(p.response for p in ports):
            m.submodules[f"response{k}"] = answer = Skid(sink.payload.shape())
            m.d.comb += [answer.i.payload.tag.eq(tag[:self.tag_width]),
                         answer.i.payload.data.eq(response.payload.data[:len(sink.payload.data)]),
                         answer.i.valid.eq(taken & (which == k))]
            wiring.connect(m, answer.o, wiring.flipped(sink))
            held.append(~answer.i.ready)
        m.d.comb += response.ready.eq(~any_of(held))
        with m.If(stray):
            m.d.sync += self.error.eq(1)
        return m


class WriteMux(wiring.Component):
    """``n`` posted write ports onto one, by round robin: each port's writes stay in
    their order (the one port after takes them in turn).

    ``word`` is the ports' width, or a sequence of widths, one a port: the one port after
    carries the widest word, and the port's index in ``ceil_log2(n)`` address bits above
    the word address (as a :class:`WriteBridge` of the same widths reads it).

    Members
    -------
    ports : list of In(MemoryWritePortSignature(addr_width, port's word))
        Also the members ``ports__0`` ... (see :func:`_ports`).
    mem : Out(MemoryWritePortSignature(addr_width + ceil_log2(n), widest word))
    """

    def __init__(self, n, addr_width, word):
        widths = _each(n, word)
        self.n = n
        super().__init__({
            **_ports("ports", (MemoryWritePortSignature(addr_width, w) for w in widths)),
            "mem": Out(MemoryWritePortSignature(addr_width + ceil_log2(n), max(widths))),
        })
        self.ports = _listed(self, "ports", n)

    def elaborate(self, platform):
        m = Module()
        request = self.mem.request
        m.submodules.merge = merge = Merge(self.n, data.StructLayout(
            {"addr": len(self.ports[0].request.payload.addr),
             "data": len(request.payload.data)}))
        for port, i in zip(self.ports, merge.i, strict=True):
            m.d.comb += [i.payload.addr.eq(port.request.payload.addr),
                         i.payload.data.eq(port.request.payload.data),
                         i.valid.eq(port.request.valid), port.request.ready.eq(i.ready)]
        chosen = merge.o.payload
        m.d.comb += [request.payload.addr.eq(Cat(chosen.item.addr, chosen.port)),
                     request.payload.data.eq(chosen.item.data),
                     request.valid.eq(merge.o.valid), merge.o.ready.eq(request.ready)]
        return m


PORTS = 16
WORD = Param("word", 64, 1, 4096, "bits of a port's word (every port's, but for those "
                                  "widths= gives from Python)")
KINDS = ("tagged", "ordered", "write")
"""The master's kinds of port, in the order of their read IDs (writes apart)."""


def _signature(kind, addr_width, width, tag):
    """A master's port of ``kind`` and words of ``width`` bits."""
    if kind == "tagged":
        return TaggedMemoryPortSignature(addr_width, width, tag)
    if kind == "ordered":
        return MemoryPortSignature(addr_width, width)
    return MemoryWritePortSignature(addr_width, width)


def _widths(widths, counts, word):
    """Each kind's port widths (``counts``: its ports, a count a kind), ``word`` for a kind
    ``widths`` leaves out."""
    unknown = sorted(set(widths) - set(KINDS))
    if unknown:
        raise ParameterError(f"widths={{{unknown[0]!r}: ...}}: no such ports (the kinds "
                             f"are {', '.join(KINDS)})")
    chosen = {}
    for kind, n in zip(KINDS, counts, strict=True):
        given = tuple(widths.get(kind, (word,) * n))
        if len(given) != n:
            raise ParameterError(f"widths[{kind!r}]: {len(given)} widths for {n} ports")
        for k, width in enumerate(given):
            try:
                WORD.check(width)
            except ParameterError:
                raise ParameterError(f"widths[{kind!r}][{k}]={width!r}: expected "
                                     f"{WORD.allowed()}") from None
        chosen[kind] = given
    return chosen


@block("axi_master")
class AxiMaster(wiring.Component):
    """The accelerator's one AXI4 master: tagged, in-order and write ports onto one bus,
    each port of words of its own width.

    ``reads`` tagged read ports (``tagged[i]``), ``ordered`` in-order read ports
    (``ordered[i]``, each through a :class:`~sparseforge.hw.stream_units.Reorder` of
    ``2**tag`` slots) and ``writes`` write ports (``write[i]``), each at word addresses of
    ``addr_width`` bits. A port's words are ``word`` bits, or as ``widths`` (Python only,
    for composites) gives: ``{"tagged": (24, 16), "write": (64,)}``, a width for each
    port of a kind, in port order; a kind left out takes ``word``. A port's word address
    ``a`` is byte ``a * word_bytes(width)``, so each region is an array of its own words
    (a CSR's 24-bit row pointers at 4 bytes, its 16-bit column ids at 2).

    The read ports meet in a :class:`TaggedMux` (tagged ports first), so ARID is
    ``{read port, tag}``, ``tag + ceil_log2(reads + ordered)`` bits, and one
    :class:`ReadBridge` assembles the beats of every ID, each as its port's width says;
    the write ports meet in a :class:`WriteMux` before one :class:`WriteBridge`, AWID 0:
    W carries no ID, so per-port IDs would only let B answer out of order, which no
    writer needs (it waits for none of its answers). Where the ports' widths differ, the
    bridges choose each port's size, burst and lanes by the port's index (in the ARID's
    upper bits, beside the write in its queue): one kind of word needs no choice.

    Parameters
    ----------
    widths : mapping, optional
        Port widths by kind (``"tagged"``, ``"ordered"``, ``"write"``), each a sequence
        of as many widths as the kind has ports, each as ``word`` allows.
    after : mapping, optional
        ``{ordered port: write port}``: the in-order read port's reads see that write
        port's writes taken before them (a :class:`ReadFence` before its reorder buffer),
        where a unit reads back what another wrote; the other ports are not ordered.

    Members
    -------
    tagged : In(TaggedMemoryPortSignature(addr_width, width, tag)) for each of reads
    ordered : In(MemoryPortSignature(addr_width, width)) for each of ordered
    write : In(MemoryWritePortSignature(addr_width, width)) for each of writes
        Lists; port ``k`` is also the member ``tagged__k`` (``ordered__k``,
        ``write__k``), its pins named as an array's (``tagged__0__request__valid``).
    m_axi : Out(pins(AxiSignature(axi_addr, data, read ID bits, 1)))
        The bus, standard-named: ``m_axi__araddr``, ``m_axi__rready``, ...
    idle : Out(1)
        Every write taken has been answered on B (before the accelerator raises done);
        a register.
    error : Out(1)
        An error response, or a response with an ID the master did not send (sticky).

    Timing: AR comes from a register slice, AW and W from their queues' registers (where the
    widths differ, through the choice of the port's shift, length, size and lanes by the
    kind those registers hold), RREADY from the response slices' registers (each port has
    its own, after the choice by RID: see :class:`TaggedMux`) and BREADY is constant, so no
    path crosses the bus. What is left are short handshake chains beside the slices and
    queues: a write's acceptance (the word queue's level, through the outstanding count, to
    the address queue's write enable), the read request slice's reload, and R's last beat
    through the read bridge's slot buffer (a LUT RAM read by RID) into a port's response
    slice. The report's configurations meet 100 MHz on the ECP5-25k (``sparseforge synth
    axi_master`` gives the figure and names the path). More read ports lengthen the round
    robin: with six, one of them in order, the path runs from a request's valid (the reorder
    buffer's room a register) through the grant's chain into the read request slice's
    address, whatever the widths. ``idle`` is a register, so the writes in flight reach no
    reader's logic. An in-order port's answer is the reorder buffer's registered head
    (:class:`~sparseforge.hw.stream_units.Reorder`), so a reader's logic placed across a
    larger part (the accelerator) starts at a flip-flop, with no cycle added (a
    :class:`~sparseforge.hw.stream_units.Skid` there would add one to every read whose
    address waits for an answer, the converter's).
    """

    PARAMS = (Param("reads", 2, 0, PORTS, "tagged read ports"),
              Param("ordered", 1, 0, PORTS, "in-order read ports"),
              Param("writes", 1, 1, PORTS, "write ports"),
              Param("addr_width", 24, 1, 62, "bits of a port's word address"),
              WORD,
              Param("tag", 3, 1, 8, "bits of a read's tag (in-order ports: 2**tag reads "
                                    "in flight)"),
              Param("data", 64, 8, 1024, "bits of the AXI data bus", pow2=True),
              Param("axi_addr", 32, 12, 64, "bits of an AXI byte address"),
              Param("outstanding", 16, 1, 256, "writes taken and not yet answered"))
    REPORT = ({}, {"reads": 4, "ordered": 0, "writes": 2, "word": 128, "data": 32})

    def __init__(self, widths=None, after=None, **params):
        v = self.params = check_params(AxiMaster.PARAMS, params)
        if v["reads"] + v["ordered"] == 0:
            raise ParameterError("reads=0, ordered=0: the master has no read port")
        self.widths = _widths(widths or {}, (v["reads"], v["ordered"], v["writes"]),
                              v["word"])
        self.after = dict(after or {})
        for read, write in self.after.items():
            if not (0 <= read < v["ordered"] and 0 <= write < v["writes"]):
                raise ParameterError(f"after={{{read}: {write}}}: the master has "
                                     f"{v['ordered']} in-order and {v['writes']} write ports")
        for width in sorted({w for kind in KINDS for w in self.widths[kind]}):
            _Word(v["addr_width"], width, v["axi_addr"], v["data"])
        self.read_id = v["tag"] + ceil_log2(v["reads"] + v["ordered"])
        if self.read_id > 32:
            raise ParameterError(f"tag={v['tag']}: ARID would be {self.read_id} bits")
        members = {}
        for kind in KINDS:
            members |= _ports(kind, (_signature(kind, v["addr_width"], width, v["tag"])
                                     for width in self.widths[kind]))
        super().__init__({**members, "m_axi": Out(pins(AxiSignature(
            v["axi_addr"], v["data"], self.read_id, 1))),
            "idle": Out(1), "error": Out(1)})
        for kind in KINDS:
            setattr(self, kind, _listed(self, kind, len(self.widths[kind])))

    def elaborate(self, platform):
        m = Module()
        v = self.params
        axi = (v["axi_addr"], v["data"])
        reads = (*self.widths["tagged"], *self.widths["ordered"])
        m.submodules.reads = mux = TaggedMux(len(reads), v["addr_width"], reads, v["tag"])
        for k in range(v["reads"]):
            wiring.connect(m, wiring.flipped(self.tagged[k]), mux.ports[k])
        fences = {}
        for k, width in enumerate(self.widths["ordered"]):
            m.submodules[f"reorder{k}"] = reorder = Reorder(v["addr_width"], width,
                                                            1 << v["tag"])
            port = wiring.flipped(self.ordered[k])
            if k in self.after:
                m.submodules[f"fence{k}"] = fences[k] = fence = ReadFence(v["addr_width"], width,
                                                              v["outstanding"])
                wiring.connect(m, port, fence.port)
                port = fence.mem
            wiring.connect(m, port, reorder.port)
            wiring.connect(m, reorder.mem, mux.ports[v["reads"] + k])
        m.submodules.read = read = ReadBridge(v["addr_width"], reads, self.read_id, *axi)
        wiring.connect(m, mux.mem, read.port)

        writes = self.widths["write"]
        m.submodules.writes = wmux = WriteMux(len(writes), v["addr_width"], writes)
        for k in range(len(writes)):
            wiring.connect(m, wiring.flipped(self.write[k]), wmux.ports[k])
        m.submodules.write = write = WriteBridge(v["addr_width"], writes, *axi,
                                                 v["outstanding"])
        wiring.connect(m, wmux.mem, write.port)
        for k, fence in fences.items():
            watched = self.write[self.after[k]].request
            m.d.comb += fence.watched.eq(watched.valid & watched.ready)
            wiring.connect(m, write.landing, fence.landing)

        m.submodules.pinout = pinout = Pinout(AxiSignature(*axi, self.read_id, 1))
        wiring.connect(m, read.axi, pinout.channels.read)
        wiring.connect(m, write.axi, pinout.channels.write)
        wiring.connect(m, pinout.pins, wiring.flipped(self.m_axi))
        m.d.comb += [self.idle.eq(write.idle),
                     self.error.eq(mux.error | read.error | write.error)]
        return m
