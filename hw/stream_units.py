"""The stream primitives every block shares, each written once: a queue, a skid buffer, a
round-robin arbiter, a FIFO beside a pipeline, pipelines run in lockstep with a tag beside
them, a reorder buffer that puts a memory's out-of-order answers back in order, and
one-hot selection of the lowest set bit.

The queue, the skid buffer and the arbiter are registered blocks too (``queue``, ``skid``,
``round_robin``), so the synthesis report gives their cost alone: built there from integer
parameters, an item of ``width`` unsigned bits; in a block, from its item's shape."""

import functools
import operator

from amaranth.hdl import Array, Const, Module, Mux, Shape, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from .interfaces import TaggedMemoryPortSignature
from .pipeline import Pipeline

WIDTH = Param("width", 32, 1, 1024, "bits of an item (from Python, shape= gives any shape)")


def _item(cls, shape, values, params):
    """An item's shape: ``shape`` where given, else ``width`` unsigned bits."""
    if shape is None:
        return unsigned(values[WIDTH.name])
    if WIDTH.name in params:
        raise ParameterError(f"{cls.__name__} takes an item's shape or its width, not both")
    return shape


class Beside(wiring.Component):
    """Carries side data past a one-in, one-out pipeline and rejoins it with the output.

    A pipeline block (prefix sum, divide/modulo) transforms its own payload only;
    whatever belongs with an item (its values, its flags) waits beside it, in order, and
    leaves with the pipeline's result for that item.

    Parameters
    ----------
    data_in, data_out : the pipeline's input and output payload shapes.
    side : the shape of what travels beside it.
    latency : the pipeline's latency.
    lockstep : where the side waits.

        - False: in a latency-2 :class:`Queue` of ``latency + 2`` items (its own latency
          is 2, so ``latency`` is at least 2), enough for one item a cycle whatever the
          pipeline's flow; the queue fits distributed or block RAM, for long pipelines
          and wide sides.
        - True: in ``latency`` registers that advance with the pipeline's stages, for a
          :class:`~sparseforge.hw.pipeline.Pipeline` (its input ready exactly when its
          output is empty or taken), whose stages hold the items in step with them.

    Members
    -------
    enter : In(stream({data: data_in, side}))
    to_pipe : Out(stream(data_in))
        To the pipeline's input.
    from_pipe : In(stream(data_out))
        From the pipeline's output: one item per item sent, in order.
    leave : Out(stream({data: data_out, side}))

    An item enters when the pipeline and the side's store both take it and leaves when
    both its result and its side are there. Latency: the pipeline's; throughput: one item
    a cycle.
    """

    def __init__(self, data_in, data_out, side, latency, lockstep=False):
        least = 0 if lockstep else 2
        if latency < least:
            raise ValueError(f"latency={latency}: Beside needs a pipeline of at least "
                             f"{least} cycles" + ("" if lockstep else " (its FIFO's latency)"))
        self.side, self.latency, self.lockstep = side, latency, lockstep
        self.depth = latency if lockstep else latency + 2       # sides the store holds
        super().__init__({
            "enter": In(stream.Signature(data.StructLayout({"data": data_in, "side": side}))),
            "to_pipe": Out(stream.Signature(data_in)),
            "from_pipe": In(stream.Signature(data_out)),
            "leave": Out(stream.Signature(data.StructLayout({"data": data_out,
                                                              "side": side}))),
        })

    def elaborate(self, platform):
        m = Module()
        enter, leave = self.enter, self.leave
        if self.lockstep:
            store = stream.Signature(self.side)
            put, get = store.create(path=("put",)), store.create(path=("get",))
            pipe = Pipeline(m, put, get)
            side = Value.cast(put.payload)
            for _ in range(self.latency):
                side = pipe.stage(side)
            pipe.finish()
            m.d.comb += get.payload.eq(side)
        else:
            m.submodules.store = store = Queue(self.side, depth=self.depth, latency=2)
            put, get = store.i, store.o
        m.d.comb += [
            self.to_pipe.payload.eq(enter.payload.data),
            self.to_pipe.valid.eq(enter.valid & put.ready),
            put.payload.eq(enter.payload.side),
            put.valid.eq(enter.valid & self.to_pipe.ready),
            enter.ready.eq(self.to_pipe.ready & put.ready),
            leave.payload.data.eq(self.from_pipe.payload),
            leave.payload.side.eq(get.payload),
            leave.valid.eq(self.from_pipe.valid & get.valid),
            self.from_pipe.ready.eq(leave.ready & get.valid),
            get.ready.eq(leave.ready & self.from_pipe.valid),
        ]
        return m


def _streams(unit):
    """The names of ``unit``'s one input stream and one output stream."""
    found = {flow: [name for name, member in unit.signature.members.items()
                    if member.is_signature and member.flow == flow
                    and isinstance(member.signature, stream.Signature)] for flow in (In, Out)}
    if any(len(names) != 1 for names in found.values()):
        raise ValueError(f"{type(unit).__name__} has streams {found}: a unit in lockstep has "
                         "one input stream and one output stream")
    return found[In][0], found[Out][0]


class Lockstep(wiring.Component):
    """Feed-forward units of one latency side by side, and a tag carried beside them.

    Each MINT building block is a :class:`~sparseforge.hw.pipeline.Pipeline`: its input is
    ready exactly when its output is empty or taken, and an item comes out ``latency``
    such advances after it went in. Units built so, given every item on the same cycle and
    their outputs taken together, advance on the same cycles, as one pipeline; the tag
    (what the units do not carry: addresses, coordinates, values) travels
    :class:`Beside` them in registers that advance with their
    stages, so every output comes out with its own item's tag.

    Parameters
    ----------
    units : ``{name: unit}``, each a component with one input stream, one output stream
        and a ``latency``, the same for all.
    tag : the tag's shape.

    Members
    -------
    given : In(stream({name: the unit's input payload, ..., tag}))
    taken : Out(stream({name: the unit's output payload, ..., tag}))
        One per item given, in order.

    Latency and throughput: the units' ``latency``; one item a cycle while ``taken`` is
    taken. A held output holds every unit.
    """

    def __init__(self, units, tag):
        latencies = {unit.latency for unit in units.values()}
        if len(latencies) != 1:
            raise ValueError(f"units of latencies {sorted(latencies)} cannot run in lockstep")
        self.units, self.latency, self.tag = dict(units), latencies.pop(), tag
        self.ports = {name: _streams(unit) for name, unit in self.units.items()}
        self.payloads = [data.StructLayout({
            name: getattr(unit, self.ports[name][side]).payload.shape()
            for name, unit in self.units.items()}) for side in (0, 1)]

        def tagged(side):
            return data.StructLayout({**self.payloads[side].members, "tag": tag})

        super().__init__({"given": In(stream.Signature(tagged(0))),
                          "taken": Out(stream.Signature(tagged(1)))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.beside = beside = Beside(*self.payloads, self.tag, self.latency,
                                              lockstep=True)
        given, taken, enter, leave = self.given, self.taken, beside.enter, beside.leave
        to_pipe, from_pipe = beside.to_pipe, beside.from_pipe
        ready, valid = Const(1), Const(1)       # the units' readies and valids are equal
        for name, unit in self.units.items():
            m.submodules[name] = unit
            sink, source = (getattr(unit, port) for port in self.ports[name])
            m.d.comb += [sink.valid.eq(to_pipe.valid), sink.payload.eq(to_pipe.payload[name]),
                         source.ready.eq(from_pipe.ready),
                         from_pipe.payload[name].eq(source.payload),
                         enter.payload.data[name].eq(given.payload[name]),
                         taken.payload[name].eq(leave.payload.data[name])]
            ready &= sink.ready
            valid &= source.valid
        m.d.comb += [to_pipe.ready.eq(ready), from_pipe.valid.eq(valid),
                     enter.valid.eq(given.valid), given.ready.eq(enter.ready),
                     enter.payload.side.eq(given.payload.tag),
                     taken.valid.eq(leave.valid), leave.ready.eq(taken.ready),
                     taken.payload.tag.eq(leave.payload.side)]
        return m


@block("skid")
class Skid(wiring.Component):
    """A register slice: a stream's payload and its ``ready`` registered, one item aside.

    The item that arrives while the output stalls waits in a skid register. Cuts the
    paths through a stream (ready back, payload forward) into two cycles.

    Parameters
    ----------
    shape : an item's shape (``Skid(layout)``); or
    width : bits of an item, unsigned.

    Members
    -------
    i : In(stream(shape))
    o : Out(stream(shape))

    Latency 1 cycle; throughput one item a cycle.
    """

    PARAMS = (WIDTH,)
    REPORT = ({"width": 32},)
    latency = 1

    def __init__(self, shape=None, **params):
        self.shape = shape = _item(Skid, shape, check_params(Skid.PARAMS, params), params)
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        spare, held = Signal(self.shape, name="spare"), Signal(name="held")
        m.d.comb += i.ready.eq(~held)
        stalled = o.valid & ~o.ready
        with m.If(~held):                               # read only once held: its enable
            m.d.sync += spare.eq(i.payload)             # waits on no ``o.ready``
        with m.If(stalled & ~held):                     # an arriving item waits aside
            m.d.sync += held.eq(i.valid)
        with m.Elif(~stalled & held):
            m.d.sync += [o.payload.eq(spare), o.valid.eq(1), held.eq(0)]
        with m.Elif(~stalled):
            m.d.sync += [o.payload.eq(i.payload), o.valid.eq(i.valid)]
        return m


@block("queue")
class Queue(wiring.Component):
    """A FIFO of ``depth`` items whose output is a register.

    Parameters
    ----------
    shape : an item's shape (``Queue(layout, depth=8, latency=1)``); or
    width : bits of an item, unsigned.
    depth : items held, at least 2 (``latency=1`` or ``2``) or 4 (``latency=3``).
    latency : cycles from an item taken into an empty queue to it offered, 1, 2 or 3:

        - 1: the item goes straight to the output register; the others wait in a
          :class:`~amaranth.lib.fifo.SyncFIFO` of ``depth - 1``, read asynchronously
          (distributed RAM). For short queues that must answer at once, as the
          scratchpad's responses within their credit round trip.
        - 2: a :class:`~amaranth.lib.fifo.SyncFIFOBuffered` alone, the output its read
          port's register (the memory holds ``depth - 1``, read synchronously, so block
          RAM fits it); ``i.ready`` comes from its count and ``o.ready`` reaches its read
          enable. One register of items fewer than 3, where a block takes its head at
          once (the PE's operations, the TLU's rows).
        - 3: a :class:`~amaranth.lib.fifo.SyncFIFOBuffered`, read synchronously (so
          block RAM fits it), then the output register: ``i.ready`` too comes from a
          register, so a long queue cuts the paths between the blocks it joins.
    skid : (keyword) with ``latency=3``, what the output register is.

        - True: a :class:`Skid` (the FIFO holds ``depth - 2``), so ``o.ready`` reaches
          no further than the skid's register.
        - False: a plain register (the FIFO holds ``depth - 1``), reloaded on the cycle
          it is taken: ``o.ready`` reaches the FIFO's read enable, and one register of
          items fewer, where many queues sit side by side (the CSR-to-BSR banks).

    Members
    -------
    i : In(stream(shape))
    o : Out(stream(shape))

    Throughput: one item a cycle (with ``latency=2`` from ``depth=3``, with ``latency=3``
    from ``depth=5``: a shallower :class:`~amaranth.lib.fifo.SyncFIFOBuffered` takes an
    item every other cycle).
    """

    PARAMS = (Param("depth", 16, 2, 1 << 20, "items held (at least 4 with latency 3)"),
              Param("latency", 3, 1, 3, "cycles from an item taken to it offered"),
              WIDTH)
    REPORT = ({"depth": 16, "latency": 3, "width": 32},)

    def __init__(self, shape=None, *, skid=True, **params):
        v = check_params(Queue.PARAMS, params)
        self.depth, self.latency, self.skid = v["depth"], v["latency"], skid
        self.shape = shape = _item(Queue, shape, v, params)
        least = 4 if self.latency == 3 else 2
        if self.depth < least:
            raise ParameterError(f"depth={self.depth}: a Queue of latency {self.latency} "
                                 f"holds at least {least} items")
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        width = Shape.cast(self.shape).width
        i, o = self.i, self.o
        if self.latency == 2:
            m.submodules.fifo = fifo = SyncFIFOBuffered(width=width, depth=self.depth)
            m.d.comb += [fifo.w_data.eq(i.payload), fifo.w_en.eq(i.valid),
                         i.ready.eq(fifo.w_rdy), o.payload.eq(fifo.r_data),
                         o.valid.eq(fifo.r_rdy), fifo.r_en.eq(o.ready)]
            return m
        if self.latency == 3 and self.skid:
            m.submodules.fifo = fifo = SyncFIFOBuffered(width=width, depth=self.depth - 2)
            m.submodules.out = out = Skid(self.shape)
            wiring.connect(m, out.o, wiring.flipped(o))
            m.d.comb += [fifo.w_data.eq(i.payload), fifo.w_en.eq(i.valid),
                         i.ready.eq(fifo.w_rdy),
                         out.i.payload.eq(fifo.r_data), out.i.valid.eq(fifo.r_rdy),
                         fifo.r_en.eq(out.i.ready)]
            return m
        load = ~o.valid | o.ready
        if self.latency == 3:
            m.submodules.fifo = fifo = SyncFIFOBuffered(width=width, depth=self.depth - 1)
            m.d.comb += [fifo.w_data.eq(i.payload), fifo.w_en.eq(i.valid),
                         i.ready.eq(fifo.w_rdy), fifo.r_en.eq(load)]
            with m.If(load):
                m.d.sync += [o.valid.eq(fifo.r_rdy), o.payload.eq(fifo.r_data)]
            return m
        m.submodules.fifo = fifo = SyncFIFO(width=width, depth=self.depth - 1)
        bypass = load & ~fifo.r_rdy                 # the FIFO is empty: straight to the output
        m.d.comb += [i.ready.eq(fifo.w_rdy | ~o.valid),
                     fifo.w_data.eq(i.payload), fifo.w_en.eq(i.valid & ~bypass),
                     fifo.r_en.eq(load)]
        with m.If(load):
            m.d.sync += [o.valid.eq(fifo.r_rdy | i.valid),
                         o.payload.eq(Mux(fifo.r_rdy, fifo.r_data, i.payload))]
        return m


@block("round_robin")
class RoundRobin(wiring.Component):
    """A round-robin arbiter over ``n`` requesters: each waits for at most ``n - 1`` grants.

    Parameters
    ----------
    n : requesters.
    registered : (keyword) where the grant comes from.

        - False: from the requests, on the same cycle: the first requester after the
          last granted (0 when nothing requests). A grant is always taken.
        - True: from a register, so a requester's ``ready`` does not wait for the
          requests: the granted requester keeps the grant while no other requests;
          otherwise the grant moves, on the next cycle, to the first other requester
          after it. It starts at requester 0 and is never 0.

    Members
    -------
    requests : In(n)
    grant : Out(n)
        One-hot.
    """

    PARAMS = (Param("n", 4, 1, 256, "requesters"),)
    REPORT = ({"n": 8},)

    def __init__(self, *, registered=False, **params):
        self.n, self.registered = check_params(RoundRobin.PARAMS, params)["n"], registered
        super().__init__({"requests": In(self.n), "grant": Out(self.n)})

    def elaborate(self, platform):
        m = Module()
        n, requests, grant = self.n, self.requests, self.grant
        if self.registered:
            held = Signal(n, init=1)
            others = requests & ~held
            # The requesters after the one granted, a register beside it.
            after = Signal(n, init=((1 << n) - 1) & ~1)
            m.d.comb += grant.eq(held)
            first, mask = self._pick(m, others, after)
            with m.If(others.any()):
                m.d.sync += [held.eq(first), after.eq(mask)]
            return m
        if n == 1:
            m.d.comb += grant.eq(requests)
            return m
        after = Signal(n, init=(1 << n) - 1)        # the requesters after the last granted
        first, mask = self._pick(m, requests, after)
        m.d.comb += grant.eq(first)
        with m.If(requests.any()):
            m.d.sync += after.eq(mask)
        return m

    @staticmethod
    def _pick(m, requests, after):
        """``(first, after)``: the first of ``requests`` from ``after`` on, wrapping, and
        the requesters after it. The first and those after it, of the later ones and of
        all, each from one carry chain (``x - 1``, which :func:`lowest` and the mask
        share), side by side: whether any later one requests picks last, so neither the
        grant nor the next ``after`` waits for a chain after a choice."""
        later = Signal(len(requests))
        m.d.comb += later.eq(requests & after)
        firsts, afters = [], []
        for bits in (later, requests):
            first, _ = lowest(m, bits)
            firsts.append(first)
            afters.append(~(bits ^ (bits - 1)))
        on = later.any()
        return Mux(on, *firsts), Mux(on, *afters)


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


def port_through(fetcher, memory):
    """Statements passing a :class:`MemoryPortSignature` port's requests from the
    ``fetcher``'s side to the ``memory``'s and its answers back: where
    :func:`wiring.connect` cannot go, under a condition or beside a tap on the answers."""
    return [memory.request.valid.eq(fetcher.request.valid),
            memory.request.payload.eq(fetcher.request.payload),
            fetcher.request.ready.eq(memory.request.ready),
            fetcher.response.valid.eq(memory.response.valid),
            fetcher.response.payload.eq(memory.response.payload),
            memory.response.ready.eq(fetcher.response.ready)]


class Zip(wiring.Component):
    """One in-order memory port whose words are records of several fields, each field an
    array of its own in memory, read through a port per field: a read goes to every
    field's port at the same index, and its answer is theirs joined. So a block reads
    ``{col, value}`` of a CSR whose column ids and values are separate arrays, as a user
    stores them.

    Parameters
    ----------
    addr_width : bits of an index.
    fields : ``{name: shape}``, the record's fields in order (a
        :class:`~amaranth.lib.data.StructLayout` of them is the word).

    Members
    -------
    port : In(MemoryPortSignature(addr_width, layout))
    parts : Out(MemoryPortSignature(addr_width, shape)) for each field, by its name
        (``parts[name]``).

    Each field's port takes the request when it can (a request is taken once every port
    has); an answer leaves once every port has answered it, so the ports may run apart
    by as many reads as they hold.
    """

    def __init__(self, addr_width, fields):
        self.layout = data.StructLayout(fields)
        self.names = tuple(fields)
        super().__init__({
            "port": In(MemoryPortSignature(addr_width, self.layout)),
            **{f"part_{name}": Out(MemoryPortSignature(addr_width, shape))
               for name, shape in fields.items()}})

    def part(self, name):
        return getattr(self, f"part_{name}")

    def elaborate(self, platform):
        m = Module()
        request, response = self.port.request, self.port.response
        taken, answered = [], []
        for name in self.names:
            part = self.part(name)
            sent = Signal(name=f"sent_{name}")
            m.d.comb += [part.request.payload.eq(request.payload),
                         part.request.valid.eq(request.valid & ~sent),
                         response.payload[name].eq(part.response.payload)]
            taken.append(sent | part.request.ready)
            answered.append(part.response.valid)
            with m.If(part.request.valid & part.request.ready):
                m.d.sync += sent.eq(1)
            with m.If(request.valid & request.ready):
                m.d.sync += sent.eq(0)
        all_taken, all_answered = all_of(taken), all_of(answered)
        m.d.comb += [request.ready.eq(all_taken), response.valid.eq(all_answered)]
        for name in self.names:
            m.d.comb += self.part(name).response.ready.eq(all_answered & response.ready)
        return m


class Offset(wiring.Component):
    """An in-order memory port moved to ``base``: a read of index ``n`` goes out as one
    of ``base + n``, so a block that reads its array by index finds it wherever its
    parent placed it. Combinational: it adds no cycle.

    Members
    -------
    port : In(MemoryPortSignature(addr_width, data))
    mem : Out(MemoryPortSignature(addr_width, data))
    base : In(addr_width), held while reads go.
    """

    def __init__(self, addr_width, data):
        super().__init__({"port": In(MemoryPortSignature(addr_width, data)),
                          "mem": Out(MemoryPortSignature(addr_width, data)),
                          "base": In(addr_width)})

    def elaborate(self, platform):
        m = Module()
        request, out = self.port.request, self.mem.request
        m.d.comb += [out.valid.eq(request.valid), request.ready.eq(out.ready),
                     out.payload.eq(request.payload + self.base)]
        answer, given = self.port.response, self.mem.response
        m.d.comb += [answer.valid.eq(given.valid), given.ready.eq(answer.ready),
                     answer.payload.eq(given.payload)]
        return m


class Reorder(wiring.Component):
    """An in-order memory port over a memory that answers out of order: the reads' tags
    and a reorder buffer of ``tags`` words, written once for every block that reads so
    (the TLU's entries, the MLU's matrix words).

    Read ``n`` (counted from the last ``restart``) goes out tagged ``n % tags`` and only
    once read ``n - tags`` has left slot ``n % tags``, so no tag is ever in flight twice.
    A response fills its slot whenever it comes (``mem.response`` is always ready); the
    head slot's word is offered on ``port.response`` once it is filled, and leaves when
    taken.

    Parameters
    ----------
    addr_width, data_width : bits of an address and of a word.
    tags : reads in flight, the buffer's slots (a power of two, at least 2).

    Members
    -------
    port : In(MemoryPortSignature(addr_width, data_width))
        The reader's side: addresses in, their words out in the same order.
    mem : Out(TaggedMemoryPortSignature(addr_width, data_width, log2(tags)))
        The memory's side.
    restart : In(1)
        While high (with nothing in flight or waiting, as between a block's loads), the
        next read is tagged 0 again: a load's tags depend on that load alone.

    Latency and throughput: a word is offered the cycle after its response (the slot's
    write) and its slot takes a new read the cycle after the word leaves, so a slot is
    busy ``L + 2`` cycles for a memory that answers ``L`` cycles after a read: one read
    and one word a cycle while ``tags >= L + 2``. The offered word and its ``valid`` are
    registers (the next head's two candidates read ahead, the reader's ``ready`` choosing
    between them last), so the reader's logic starts at a flip-flop rather than after the
    slots' read and the tag compares, with the same cycles. Whether a slot is free for the
    next read is a register as well, so the request's handshake (into an arbiter, in the
    AXI master) starts at one rather than after the difference of the two counts.
    """

    def __init__(self, addr_width, data_width, tags):
        if tags < 2 or tags & (tags - 1):
            raise ParameterError(f"tags={tags}: a Reorder's slots are a power of two, "
                                 "at least 2")
        self.tags, self.width = tags, data_width
        super().__init__({
            "port": In(MemoryPortSignature(addr_width, data_width)),
            "mem": Out(TaggedMemoryPortSignature(addr_width, data_width, exact_log2(tags))),
            "restart": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        k, port, mem = exact_log2(self.tags), self.port, self.mem
        issued, head = Signal(k + 1), Signal(k + 1)     # reads made, words left (mod 2 tags)
        # A slot is free while fewer than ``tags`` reads are in flight or waiting: a read
        # with no word leaving takes the last one, a word with no read frees one.
        free, took = Signal(init=1), Signal()
        response, left = mem.response, port.response.valid & port.response.ready
        m.d.comb += [mem.request.valid.eq(port.request.valid & free),
                     port.request.ready.eq(mem.request.ready & free),
                     mem.request.payload.addr.eq(port.request.payload),
                     mem.request.payload.tag.eq(issued[:k]),
                     took.eq(mem.request.valid & mem.request.ready)]
        m.d.sync += free.eq(Mux(took == left, free, left | ((issued - head)[:k + 1]
                                                            != self.tags - 1)))
        with m.If(took):
            m.d.sync += issued.eq(issued + 1)

        m.submodules.slots = slots = Memory(shape=self.width, depth=self.tags, init=[])
        write = slots.write_port()
        full, filled, cleared = (Signal(self.tags, name=n) for n in ("full", "filled", "cleared"))
        m.d.comb += [response.ready.eq(1), write.addr.eq(response.payload.tag),
                     write.data.eq(response.payload.data), write.en.eq(response.valid)]
        m.d.comb += [filled[t].eq(response.valid & (response.payload.tag == t))
                     for t in range(self.tags)]
        m.d.comb += [cleared[t].eq(left & (head[:k] == t)) for t in range(self.tags)]
        m.d.sync += full.eq((full & ~cleared) | filled)

        # The head's word and whether it is filled, registered: next cycle's head is this
        # one's or the one behind it (the reader's ready picks, last). The one behind is
        # read from the slots or taken from the response filling it now; this one is the
        # offered word, or the response filling it now: a head not yet offered was empty
        # when it became the head, and its response comes while it is, so the slots need
        # one read port, not two (a wide word's buffer half the logic: no second mux).
        offer = port.response

        def filling(at):
            return response.valid & (response.payload.tag == at)

        behind, read = (head + 1)[:k], slots.read_port(domain="comb")
        m.d.comb += read.addr.eq(behind)
        stay_valid = offer.valid | filling(head[:k])
        stay_data = Mux(offer.valid, offer.payload, response.payload.data)
        move_valid = Array(full)[behind] | filling(behind)
        move_data = Mux(filling(behind), response.payload.data, read.data)
        m.d.sync += [offer.valid.eq(Mux(left, move_valid, stay_valid)),
                     offer.payload.eq(Mux(left, move_data, stay_data))]
        with m.If(left):
            m.d.sync += head.eq(head + 1)
        with m.If(self.restart):
            m.d.sync += [issued.eq(0), head.eq(0), free.eq(1), offer.valid.eq(0)]
        return m


def lowest(m, bits):
    """``(first, rest)``: the lowest set bit of ``bits`` (one-hot) and the others, as
    signals (so the Verilog keeps every bit of them in use)."""
    first, rest = Signal(len(bits)), Signal(len(bits))
    m.d.comb += [rest.eq(bits & (bits - 1)), first.eq(bits & ~rest)]
    return first, rest


def at_most_one(bits):
    """Whether no two bits of ``bits`` are set: a balanced tree of each group's (any set,
    two set), no carry chain (``bits & (bits - 1)`` is one)."""
    level = [(bit, Const(0)) for bit in bits]
    while len(level) > 1:
        odd = level[-1:] if len(level) % 2 else []
        level = [(a | c, b | d | (a & c))
                 for (a, b), (c, d) in zip(level[::2], level[1::2], strict=False)] + odd
    return ~level[0][1]


def _tree(op, values, empty):
    """``empty`` and ``values`` combined pairwise by ``op`` (the value of a left fold from
    ``empty``), a balanced tree: its depth the log of their number, so a wide one (the
    Gustavson PE's groups of a 2048-column tile) neither nests past Python's recursion
    limit nor chains in logic."""
    values = [Const(empty), *values]
    while len(values) > 1:
        values = [functools.reduce(op, values[k:k + 2]) for k in range(0, len(values), 2)]
    return values[0]


def any_of(values):
    """The OR of ``values`` (0 for none)."""
    return _tree(operator.or_, values, 0)


def all_of(values):
    """The AND of ``values`` (1 for none)."""
    return _tree(operator.and_, values, 1)
