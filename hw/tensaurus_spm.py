# amaranth: UnusedElaboratable=no
"""A Tensaurus scratchpad (SPM, Tensaurus Section 4.2, Fig. 5a): a double-buffered tile of
the dense operand matrices, banked by row, read by the PEs of its column through a
crossbar.

Storage is two halves x two operands x ``rows`` x ``tlen`` chunks of ``vlen * dw`` bits.
Row ``r`` lives in bank ``r % banks`` (consecutive rows in different banks, so PEs
reading different rows rarely collide), each bank one ``Memory`` with the fill's write
port and one synchronous read port. A request goes through four registered steps:

1. a :class:`~sparseforge.hw.stream_units.Skid` per port takes it (its ``ready`` is a
   register) with the half ``read_half`` names;
2. each bank's :class:`~sparseforge.hw.stream_units.RoundRobin` grants one of the port
   heads that want it and have a credit, and the crossbar registers that head's address
   for the bank;
3. the bank's read port, then a register right after it (the block RAM's output
   register);
4. each port picks its bank's data into its :class:`~sparseforge.hw.stream_units.Queue`
   (of latency 1), whose output is a register.

Each step is one cycle but the block RAM's two, so the crossbar's arbitration and
multiplexers have a cycle of their own on both sides of the block RAM.

A port holds a credit per free place in its queue and spends one per read, so responses
it cannot hand on yet always have a place: back-pressure on a response stalls that port's
reads, never loses data.

With ``broadcast`` (the dense kernels, Section 5.2.4: "only the PE in the first row is
responsible for sending row addresses to the SPM and the crossbar broadcasts the response
to all the PEs in the same column") port 0 alone reads, once every port has a credit, and
its answer goes to every port's queue; the other ports' requests, the same reads in the
same order, are taken and dropped. So the column's PEs share one read a chunk and no two
of them contend for a bank.
"""

import itertools

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In
from amaranth.utils import ceil_log2

from ..core.errors import ParameterError
from ..core.params import Param, check_params
from ..core.registry import block
from .interfaces import ScratchpadPortSignature, pe_request_layout, spm_fill_layout
from .stream_units import Queue, RoundRobin, Skid, any_of


class SpmSignature(wiring.Signature):
    """A Tensaurus scratchpad (Section 5.2.3, Fig. 5a), seen from it: one per PE column.

    - ``fill`` (stream in, :func:`~.interfaces.spm_fill_layout`): the MLU's writes, one a
      cycle.
    - ``read_half`` (in): the half the PEs read; fills go to either half, and a fill
      into the half being read is the writer's own affair.
    - ``broadcast`` (in, with more than one port): port 0's reads answer every port;
      the others' are dropped (every port must make the same reads). Changed only while
      no read is in flight.
    - ``ports`` (``ports`` of them, each the flip of
      :class:`~.interfaces.ScratchpadPortSignature`): one per PE of the column; each
      answers its requests in order.
    """

    def __init__(self, ports, iw, tlen, vlen, dw):
        super().__init__({
            "fill": In(stream.Signature(spm_fill_layout(iw, tlen, vlen, dw))),
            "read_half": In(1),
            **({"broadcast": In(1)} if ports > 1 else {}),
            "ports": In(ScratchpadPortSignature(iw, tlen, vlen, dw)).array(ports),
        })


@block("tensaurus_spm")
class TensaurusSpm(wiring.Component):
    """A Tensaurus scratchpad: a double-buffered tile of both operand matrices, banked by
    row, each PE port reading one chunk a cycle through a round-robin crossbar.

    Parameters
    ----------
    ports : PEs served (the PE rows of a column).
    banks : memories, row ``r`` in bank ``r % banks``.
    rows : matrix rows held per operand and per half.
    tlen, vlen, dw, iw : chunks of a row, values of a chunk, bits of a value, of an index.

    Members
    -------
    fill : In(stream(spm_fill_layout))
    read_half, broadcast : In(1)
    ports : [ports] x In(ScratchpadPortSignature)
        As :class:`~sparseforge.hw.tensaurus_spm.SpmSignature` says. A request reads the
        half ``read_half`` names on the cycle it is taken. A fill outside ``rows`` x
        ``tlen`` is dropped; a request there is answered with zeros.

    Latency and throughput: ``fill`` is always ready, one chunk a cycle; a fill taken
    on cycle ``t`` is seen by every read taken on ``t + 1`` or later. A request taken on
    cycle ``c`` is answered on ``c + 5`` at the earliest (:attr:`latency`), each port one
    a cycle while it reads a bank no other port wants and takes its responses; ports
    wanting one bank share it round-robin, one read a cycle between them.
    """

    PARAMS = (Param("ports", 2, 1, 16, "PE ports served"),
              Param("banks", 2, 1, 16, "memory banks, row r in bank r % banks", pow2=True),
              Param("rows", 64, 1, 1 << 16, "matrix rows held per operand and per half"),
              Param("tlen", 2, 1, 64, "chunks of a row (TLEN)"),
              Param("vlen", 4, 1, 16, "values of a chunk (VLEN)"),
              Param("dw", 16, 2, 32, "bits of a value"),
              Param("iw", 16, 1, 32, "bits of an index"))
    REPORT = ({}, {"ports": 4, "banks": 4, "rows": 64, "tlen": 2, "vlen": 4})
    PAPER = "Table 2 (28 nm): SPM 0.832 mm2, 36.2% (8 SPMs), crossbar 0.066 mm2, 2.8%"

    latency = 5
    """Cycles from a request taken to its response offered, when nothing waits."""
    queue = 5
    """Responses each port's queue holds: the round trip, so a port reads one a cycle."""

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.nports, self.banks, self.rows = v["ports"], v["banks"], v["rows"]
        self.tlen, self.vlen, self.dw, self.iw = v["tlen"], v["vlen"], v["dw"], v["iw"]
        if self.banks > self.rows:
            raise ParameterError(f"parameter banks={self.banks}: expected at most rows="
                                 f"{self.rows} (a bank would hold no row)")
        if self.rows > 1 << self.iw:
            raise ParameterError(f"parameter rows={self.rows}: expected at most 2**iw = "
                                 f"{1 << self.iw} (a row index has iw bits)")
        self.bank_rows = -(-self.rows // self.banks)
        self.depth = 4 * self.bank_rows * self.tlen        # (half, operand, row, chunk)
        self.slot_layout = data.StructLayout({"request": pe_request_layout(self.iw, self.tlen),
                                              "half": 1})
        super().__init__(SpmSignature(self.nports, self.iw, self.tlen, self.vlen, self.dw))

    def locate(self, m, half, operand, row, chunk, name):
        """``(bank one-hot, address in the bank, inside)`` of a chunk."""
        bb, T = ceil_log2(self.banks), self.tlen
        offset = Signal(range(self.bank_rows * T), name=f"{name}_offset")   # in the region
        addr = Signal(range(self.depth), name=f"{name}_addr")
        inside = Signal(name=f"{name}_inside")
        m.d.comb += [offset.eq(row[bb:] * T + chunk),
                     addr.eq(Cat(operand, half) * (self.bank_rows * T) + offset),
                     inside.eq((row < self.rows) & (chunk < T))]
        return Cat(row[:bb] == b for b in range(self.banks)), addr, inside

    def elaborate(self, platform):
        m = Module()
        P, B, W = self.nports, self.banks, self.vlen * self.dw

        # The fill, registered, into the bank of its row.
        fill = self.fill
        written, w = Signal(), Signal.like(fill.payload, name="written")
        m.d.comb += fill.ready.eq(1)
        m.d.sync += [written.eq(fill.valid), w.eq(fill.payload)]
        w_bank, w_addr, w_inside = self.locate(m, w.half, w.operand, w.row, w.chunk, "fill")
        read_addr, read_data = [], []
        for b in range(B):
            m.submodules[f"bank{b}"] = mem = Memory(shape=W, depth=self.depth, init=[])
            wr, rd = mem.write_port(), mem.read_port(transparent_for=())
            m.d.comb += [wr.en.eq(written & w_inside & w_bank[b]), wr.addr.eq(w_addr),
                         wr.data.eq(w.lanes)]
            out = Signal(W, name=f"data{b}")       # the block RAM's output register
            m.d.sync += out.eq(rd.data)
            raddr = Signal(range(self.depth), name=f"read_addr{b}")
            m.d.comb += rd.addr.eq(raddr)
            read_addr.append(raddr)
            read_data.append(out)

        # Each port's head: its slot, where it reads, whether it may (a credit).
        heads = []
        for p, port in enumerate(self.ports):
            m.submodules[f"slot{p}"] = slot = Skid(self.slot_layout)
            m.d.comb += [slot.i.valid.eq(port.request.valid),
                         slot.i.payload.eq(Cat(port.request.payload, self.read_half)),
                         port.request.ready.eq(slot.i.ready)]
            head = slot.o.payload.request
            bank, addr, inside = self.locate(m, slot.o.payload.half, head.operand, head.row,
                                             head.chunk, f"head{p}")
            credits = Signal(range(self.queue + 1), init=self.queue, name=f"credits{p}")
            may = Signal(init=1, name=f"may{p}")              # credits != 0, registered
            heads.append((slot, bank, addr, inside, credits, may))
        # Its head's bank, if it may read: in a broadcast, port 0's once all may.
        broadcast = self.broadcast if P > 1 else 0
        everyone = Cat(head[5] for head in heads).all()
        want = [Signal(B, name=f"wants{p}") for p in range(P)]
        for p, (slot, bank, *_, may) in enumerate(heads):
            if P > 1:
                may = Mux(broadcast, everyone if p == 0 else 0, may)
            m.d.comb += want[p].eq(bank & (slot.o.valid & may).replicate(B))

        # The crossbar: each bank grants one head, round-robin, and reads its address.
        grants = []
        for b in range(B):
            m.submodules[f"arbiter{b}"] = arbiter = RoundRobin(n=P)
            m.d.comb += arbiter.requests.eq(Cat(w[b] for w in want))
            m.d.sync += read_addr[b].eq(any_of(Mux(arbiter.grant[p], head[2], 0)
                                               for p, head in enumerate(heads)))
            grants.append(arbiter.grant)

        # Each port's read (port 0's in a broadcast), three cycles on, from its bank's data
        # register into its queue.
        route = data.StructLayout({"valid": 1, "bank": B, "inside": 1})
        granted = [Signal(name=f"granted{p}") for p in range(P)]
        m.d.comb += [granted[p].eq(any_of(g[p] for g in grants)) for p in range(P)]
        for p, ((slot, bank, _, inside, credits, may), port) in enumerate(
                zip(heads, self.ports, strict=True)):
            read = granted[p]
            if p:                   # in a broadcast, port 0's read; its own are dropped
                read = Mux(broadcast, granted[0], granted[p])
                bank = Mux(broadcast, heads[0][1], bank)
                inside = Mux(broadcast, heads[0][3], inside)
            m.d.comb += slot.o.ready.eq(granted[p] | (broadcast if p else 0))
            steps = [Signal(route, name=f"route{p}_{k}") for k in range(3)]
            m.d.sync += [steps[0].valid.eq(read), steps[0].bank.eq(bank),
                         steps[0].inside.eq(inside),
                         *(later.eq(now) for now, later in itertools.pairwise(steps))]
            queue = Queue(port.response.payload.shape(), depth=self.queue, latency=1)
            m.submodules[f"queue{p}"] = queue
            last = steps[-1]
            chosen = any_of(Mux(last.bank[b], read_data[b], 0) for b in range(B))
            m.d.comb += [queue.i.valid.eq(last.valid),
                         queue.i.payload.eq(Mux(last.inside, chosen, 0))]
            wiring.connect(m, queue.o, wiring.flipped(port.response))
            taken = port.response.valid & port.response.ready
            left = Signal.like(credits, name=f"left{p}")
            m.d.comb += left.eq(credits)
            with m.If(read & ~taken):
                m.d.comb += left.eq(credits - 1)
            with m.Elif(taken & ~read):
                m.d.comb += left.eq(credits + 1)
            m.d.sync += [credits.eq(left), may.eq(left != 0)]
        return m
