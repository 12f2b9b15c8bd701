"""The accelerator's one AXI4 master: its memory ports mapped onto AXI4 bursts and IDs.

The units speak three memory ports: tagged reads
(:class:`~sparseforge.hw.interfaces.TaggedMemoryPortSignature`, the TLU's and MLU's),
in-order reads (:class:`~sparseforge.hw.stream_units.MemoryPortSignature`, the MSU's
direct mode) and posted writes
(:class:`~sparseforge.hw.interfaces.MemoryWritePortSignature`, the MSU's write-back).
Their addresses count words of the port's width ``word``; a word lives in memory as
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
- :class:`TaggedMux`, :class:`WriteMux`: several ports onto one, a read port's index in
  the upper tag bits, which become the upper ARID bits.
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
        self.shift = exact_log2(wire.word_bytes(width))
        self.lanes = max(data_width // 8 >> self.shift, 1)        # words a beat holds
        self.lane_bits = exact_log2(self.lanes)
        if addr_width + self.shift > axi_addr_width:
            raise ParameterError(f"addr_width={addr_width}: words of {width} bits take "
                                 f"{addr_width + self.shift} byte-address bits, more than "
                                 f"the bus's {axi_addr_width}")
        if self.beats > MAX_BEATS:
            raise ParameterError(f"word={width}: {self.beats} beats of {data_width} bits, "
                                 f"more than an AXI4 burst's {MAX_BEATS}")

    def address(self, m, channel, addr, id_):
        """Drive address channel ``channel``'s payload for the word at ``addr``."""
        m.d.comb += [channel.payload.id.eq(id_), channel.payload.addr.eq(addr << self.shift),
                     channel.payload.len.eq(self.beats - 1),
                     channel.payload.size.eq(self.size), channel.payload.burst.eq(BURST_INCR)]


class ReadBridge(wiring.Component):
    """A tagged read port onto the read channels of AXI4.

    A read ``{addr, tag}`` is one AR, ARID its tag: a burst of ``ceil(word / data)`` beats
    at the word's byte address (one narrow beat when the word fits the bus). The beats of
    different IDs may come interleaved: each ID's beats but the last shift into its own
    slot of a buffer (one slot a tag), and its last beat, with the slot, is the response
    ``{tag, data}``. R is held back only for a last beat whose response is not taken. A
    narrow word's byte lanes, from its address, wait in a slot of their own.

    Parameters
    ----------
    addr_width, word, tag_width : the port's word address, word and tag bits.
    axi_addr_width, data_width : the bus's.

    Members
    -------
    port : In(TaggedMemoryPortSignature(addr_width, word, tag_width))
    axi : Out(AxiReadSignature(axi_addr_width, data_width, tag_width))
    error : Out(1)
        Set (and kept) by a beat whose RRESP is not OKAY; its data is answered anyway.

    Latency: a cycle from a request to its AR and from a last beat to its response (the
    register slices on the request and on R); one request and one beat a cycle.
    """

    def __init__(self, addr_width, word, tag_width, axi_addr_width, data_width):
        self.word = _Word(addr_width, word, axi_addr_width, data_width)
        super().__init__({
            "port": In(TaggedMemoryPortSignature(addr_width, word, tag_width)),
            "axi": Out(AxiReadSignature(axi_addr_width, data_width, tag_width)),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        word, response = self.word, self.port.response
        m.submodules.request = request = Skid(self.port.request.payload.shape())
        m.submodules.r = r = Skid(self.axi.r.payload.shape())
        wiring.connect(m, wiring.flipped(self.port.request), request.i)
        wiring.connect(m, wiring.flipped(self.axi.r), r.i)
        request, r, ar = request.o, r.o, self.axi.ar
        tags = 1 << len(request.payload.tag)
        word.address(m, ar, request.payload.addr, request.payload.tag)
        m.d.comb += [ar.valid.eq(request.valid), request.ready.eq(ar.ready)]

        beat = r.payload.data
        value = beat
        if word.beats > 1:                  # the earlier beats, in their tag's slot
            m.submodules.slots = slots = Memory(shape=(word.beats - 1) * word.data_width,
                                                depth=tags, init=[])
            held, keep = slots.read_port(domain="comb"), slots.write_port()
            m.d.comb += [held.addr.eq(r.payload.id), keep.addr.eq(r.payload.id),
                         keep.data.eq(Cat(held.data[word.data_width:], beat)),
                         keep.en.eq(r.valid & ~r.payload.last)]
            value = Cat(held.data, beat)
        elif word.lanes > 1:                # a narrow word: its lanes, kept from its AR
            m.submodules.lanes = lanes = Memory(shape=word.lane_bits, depth=tags, init=[])
            lane, keep = lanes.read_port(domain="comb"), lanes.write_port()
            m.d.comb += [keep.addr.eq(request.payload.tag),
                         keep.data.eq(request.payload.addr[:word.lane_bits]),
                         keep.en.eq(ar.valid & ar.ready), lane.addr.eq(r.payload.id)]
            value = Array(beat.word_select(i, 8 << word.shift)
                          for i in range(word.lanes))[lane.data]
        m.d.comb += [response.payload.tag.eq(r.payload.id),
                     response.payload.data.eq(value[:word.width]),
                     response.valid.eq(r.valid & r.payload.last),
                     r.ready.eq(~r.payload.last | response.ready)]
        with m.If(r.valid & r.ready & (r.payload.resp != OKAY)):
            m.d.sync += self.error.eq(1)
        return m


class WriteBridge(wiring.Component):
    """A posted write port onto the write channels of AXI4.

    A write ``{addr, data}`` is one AW (AWID ``0``, a burst of ``ceil(word / data)``
    beats at the word's byte address, as :class:`ReadBridge`'s) and its beats on W, every
    strobe set (a narrow word: the strobes of its bytes, the word on every lane). The
    write is taken once the address queue and the word queue (``words`` each) both have
    room; then AW leaves as the slave takes it and W as the slave takes its beats, so
    either runs up to ``words`` writes ahead of the other. One ID, so the writes land in
    the order they were taken, as the port promises.

    Parameters
    ----------
    addr_width, word : the port's word address and word bits.
    axi_addr_width, data_width : the bus's.
    outstanding : writes taken and not yet answered on B, at most; more wait.
    words : words the queue before W holds (at least 2).

    Members
    -------
    port : In(MemoryWritePortSignature(addr_width, word))
    axi : Out(AxiWriteSignature(axi_addr_width, data_width, 1))
    idle : Out(1)
        Every write taken has been answered on B: all have landed.
    error : Out(1)
        Set (and kept) by a B whose BRESP is not OKAY or whose BID is not 0.

    Throughput: a beat a cycle on W, one write every ``ceil(word / data)`` cycles.
    """

    def __init__(self, addr_width, word, axi_addr_width, data_width, outstanding=16,
                 words=4):
        self.word, self.outstanding, self.words = (
            _Word(addr_width, word, axi_addr_width, data_width), outstanding, words)
        super().__init__({
            "port": In(MemoryWritePortSignature(addr_width, word)),
            "axi": Out(AxiWriteSignature(axi_addr_width, data_width, 1)),
            "idle": Out(1),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        word, request, axi = self.word, self.port.request, self.axi
        m.submodules.aw = aw = Queue(len(request.payload.addr), depth=self.words,
                                     latency=1)
        item = data.StructLayout({"data": word.width, "lane": word.lane_bits})
        m.submodules.queue = queue = Queue(item, depth=self.words, latency=1)
        word.address(m, axi.aw, aw.o.payload, 0)
        m.d.comb += [axi.aw.valid.eq(aw.o.valid), aw.o.ready.eq(axi.aw.ready)]

        pending = Signal(range(self.outstanding + 1))
        room = pending != self.outstanding
        m.d.comb += [aw.i.payload.eq(request.payload.addr),
                     queue.i.payload.data.eq(request.payload.data),
                     queue.i.payload.lane.eq(request.payload.addr[:word.lane_bits]),
                     aw.i.valid.eq(request.valid & queue.i.ready & room),
                     queue.i.valid.eq(request.valid & aw.i.ready & room),
                     request.ready.eq(aw.i.ready & queue.i.ready & room)]

        # W: the head word's beats
        w, head = axi.w, queue.o.payload
        beat = Signal(range(word.beats))
        last = beat == word.beats - 1
        if word.lanes > 1:
            container = 8 << word.shift
            strobes = (1 << (1 << word.shift)) - 1
            m.d.comb += [w.payload.data.eq(Cat(head.data, Const(0, container - word.width))
                                           .replicate(word.lanes)),
                         w.payload.strb.eq(Array(Const(strobes << (i << word.shift),
                                                 len(w.payload.strb))
                                           for i in range(word.lanes))[head.lane])]
        else:
            padded = Cat(head.data, Const(0, word.beats * word.data_width - word.width))
            m.d.comb += [w.payload.data.eq(Array(padded.word_select(i, word.data_width)
                                                 for i in range(word.beats))[beat]),
                         w.payload.strb.eq(-1)]
        m.d.comb += [w.payload.last.eq(last), w.valid.eq(queue.o.valid),
                     queue.o.ready.eq(w.ready & last)]
        with m.If(w.valid & w.ready):
            m.d.sync += beat.eq(Mux(last, 0, beat + 1))

        b = axi.b
        sent, answered = request.valid & request.ready, b.valid & b.ready
        m.d.comb += [b.ready.eq(1), self.idle.eq(pending == 0)]
        m.d.sync += pending.eq(pending + sent - answered)
        with m.If(answered & ((b.payload.resp != OKAY) | (b.payload.id != 0))):
            m.d.sync += self.error.eq(1)
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


class TaggedMux(wiring.Component):
    """``n`` tagged read ports onto one whose tags carry the port's index above the
    port's own: requests by round robin, each response to the port its tag names.

    Members
    -------
    ports : In(TaggedMemoryPortSignature(addr_width, word, tag_width)).array(n)
    mem : Out(TaggedMemoryPortSignature(addr_width, word, tag_width + ceil_log2(n)))
    error : Out(1)
        Set (and kept) by a response whose tag names no port (a slave's ID error).
    """

    def __init__(self, n, addr_width, word, tag_width):
        self.n, self.tag_width = n, tag_width
        super().__init__({
            "ports": In(TaggedMemoryPortSignature(addr_width, word, tag_width)).array(n),
            "mem": Out(TaggedMemoryPortSignature(addr_width, word,
                                                 tag_width + ceil_log2(n))),
            "error": Out(1),
        })

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
        stray = response.valid & (which >= self.n)
        ready = [stray]
        for k, sink in enumerate(p.response for p in ports):
            here = which == k
            m.d.comb += [sink.payload.tag.eq(tag[:self.tag_width]),
                         sink.payload.data.eq(response.payload.data),
                         sink.valid.eq(response.valid & here)]
            ready.append(here & sink.ready)
        m.d.comb += response.ready.eq(any_of(ready))
        with m.If(stray):
            m.d.sync += self.error.eq(1)
        return m


class WriteMux(wiring.Component):
    """``n`` posted write ports onto one, by round robin: each port's writes stay in
    their order (the one port after takes them in turn).

    Members
    -------
    ports : In(MemoryWritePortSignature(addr_width, word)).array(n)
    mem : Out(MemoryWritePortSignature(addr_width, word))
    """

    def __init__(self, n, addr_width, word):
        self.n = n
        super().__init__({
            "ports": In(MemoryWritePortSignature(addr_width, word)).array(n),
            "mem": Out(MemoryWritePortSignature(addr_width, word)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.merge = merge = Merge(self.n, self.ports[0].request.payload.shape())
        for k, port in enumerate(self.ports):
            wiring.connect(m, wiring.flipped(port.request), merge.i[k])
        request = self.mem.request
        m.d.comb += [request.payload.eq(merge.o.payload.item),
                     request.valid.eq(merge.o.valid), merge.o.ready.eq(request.ready)]
        return m

PORTS = 16


@block("axi_master")
class AxiMaster(wiring.Component):
    """The accelerator's one AXI4 master: tagged, in-order and write ports onto one bus.

    ``reads`` tagged read ports (``tagged[i]``), ``ordered`` in-order read ports
    (``ordered[i]``, each through a :class:`~sparseforge.hw.stream_units.Reorder` of
    ``2**tag`` slots) and ``writes`` write ports (``write[i]``), every port of words of
    ``word`` bits at word addresses of ``addr_width`` bits. The read ports meet in a
    :class:`TaggedMux` (tagged ports first), so ARID is ``{read port, tag}``,
    ``tag + ceil_log2(reads + ordered)`` bits, and one :class:`ReadBridge` assembles the
    beats of every ID; the write ports meet in a :class:`WriteMux` before one
    :class:`WriteBridge`, AWID 0: W carries no ID, so per-port IDs would only let B
    answer out of order, which no writer needs (it waits for none of its answers).

    Members
    -------
    tagged : In(TaggedMemoryPortSignature(addr_width, word, tag)).array(reads)
    ordered : In(MemoryPortSignature(addr_width, word)).array(ordered)
    write : In(MemoryWritePortSignature(addr_width, word)).array(writes)
    m_axi : Out(pins(AxiSignature(axi_addr, data, read ID bits, 1)))
        The bus, standard-named: ``m_axi__araddr``, ``m_axi__rready``, ...
    idle : Out(1)
        Every write taken has been answered on B (before the accelerator raises done).
    error : Out(1)
        An error response, or a response with an ID the master did not send (sticky).

    Timing: AR comes from a register slice, AW and W from their queues' registers,
    RREADY is a register and BREADY constant, so no path crosses the bus. What is left
    are short handshake chains beside the slices and queues: a write's acceptance (the
    word queue's level, through the outstanding count, to the address queue's write
    enable), the read request slice's reload, and R's last beat through the read
    bridge's slot buffer (a LUT RAM read by RID) to a port's response. The report's
    configurations meet 100 MHz on the ECP5-25k (``sparseforge synth axi_master`` gives
    the figure and names the path).
    """

    PARAMS = (Param("reads", 2, 0, PORTS, "tagged read ports"),
              Param("ordered", 1, 0, PORTS, "in-order read ports"),
              Param("writes", 1, 1, PORTS, "write ports"),
              Param("addr_width", 24, 1, 62, "bits of a port's word address"),
              Param("word", 64, 1, 4096, "bits of a port's word"),
              Param("tag", 3, 1, 8, "bits of a read's tag (in-order ports: 2**tag reads "
                                    "in flight)"),
              Param("data", 64, 8, 1024, "bits of the AXI data bus", pow2=True),
              Param("axi_addr", 32, 12, 64, "bits of an AXI byte address"),
              Param("outstanding", 16, 1, 256, "writes taken and not yet answered"))
    REPORT = ({}, {"reads": 4, "ordered": 0, "writes": 2, "word": 128, "data": 32})

    def __init__(self, **params):
        v = self.params = check_params(AxiMaster.PARAMS, params)
        if v["reads"] + v["ordered"] == 0:
            raise ParameterError("reads=0, ordered=0: the master has no read port")
        _Word(v["addr_width"], v["word"], v["axi_addr"], v["data"])
        self.read_id = v["tag"] + ceil_log2(v["reads"] + v["ordered"])
        if self.read_id > 32:
            raise ParameterError(f"tag={v['tag']}: ARID would be {self.read_id} bits")
        members = {
            "write": In(MemoryWritePortSignature(v["addr_width"], v["word"]))
            .array(v["writes"]),
            "m_axi": Out(pins(AxiSignature(v["axi_addr"], v["data"], self.read_id, 1))),
            "idle": Out(1), "error": Out(1)}
        if v["reads"]:
            members["tagged"] = In(TaggedMemoryPortSignature(v["addr_width"], v["word"],
                                                             v["tag"])).array(v["reads"])
        if v["ordered"]:
            members["ordered"] = In(MemoryPortSignature(v["addr_width"], v["word"])
                                    ).array(v["ordered"])
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        v = self.params
        port, axi = (v["addr_width"], v["word"]), (v["axi_addr"], v["data"])
        m.submodules.reads = reads = TaggedMux(v["reads"] + v["ordered"], *port, v["tag"])
        for k in range(v["reads"]):
            wiring.connect(m, wiring.flipped(self.tagged[k]), reads.ports[k])
        for k in range(v["ordered"]):
            m.submodules[f"reorder{k}"] = reorder = Reorder(*port, 1 << v["tag"])
            wiring.connect(m, wiring.flipped(self.ordered[k]), reorder.port)
            wiring.connect(m, reorder.mem, reads.ports[v["reads"] + k])
        m.submodules.read = read = ReadBridge(*port, self.read_id, *axi)
        wiring.connect(m, reads.mem, read.port)

        m.submodules.writes = writes = WriteMux(v["writes"], *port)
        for k in range(v["writes"]):
            wiring.connect(m, wiring.flipped(self.write[k]), writes.ports[k])
        m.submodules.write = write = WriteBridge(*port, *axi, v["outstanding"])
        wiring.connect(m, writes.mem, write.port)

        m.submodules.pinout = pinout = Pinout(AxiSignature(*axi, self.read_id, 1))
        wiring.connect(m, read.axi, pinout.channels.read)
        wiring.connect(m, write.axi, pinout.channels.write)
        wiring.connect(m, pinout.pins, wiring.flipped(self.m_axi))
        m.d.comb += [self.idle.eq(write.idle),
                     self.error.eq(reads.error | read.error | write.error)]
        return m
