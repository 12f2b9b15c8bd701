# amaranth: UnusedElaboratable=no
"""A Tensaurus processing element (Tensaurus Section 5.2.4, Fig. 5b): VVMUL and VVADD over
VLEN lanes, a TSR of TLEN and an OSR of OLEN shift registers, and the control of the SF³
pattern for SpMTTKRP, SpTTMc and SpMM (and their dense and vector forms).

The PE is two halves joined by a queue of *operations*, one per chunk:

- the control walks the CISS lane (forwarding each item to the next PE of its row) and
  turns each item into phases of ``tlen`` operations: a fiber's fold (MTTKRP), a
  slice's drain, a nonzero's scaling; in TTMc a fiber's fold (the outer product) and a
  drain are ``olen = r1 * tlen``. An operation that needs a matrix row issues its
  scratchpad read as it enters the queue;
- the datapath takes the operations in order, each with its read's response when it
  needs one: it multiplies (VVMUL) and adds (VVADD) into the head of the TSR or the
  OSR, or drains the OSR's head, and shifts the register by one. A phase shifts a
  register once around (``tlen`` chunks, or the OSR's ``olen`` in TTMc), so it is back
  in place for the next.

SpMV and GEMV (the ``MV`` kernel) run on the first PE column alone (Section 5.2.4): a
PE forwards only the end marker, so the columns after it idle; each nonzero is one
operation that reads one element of b (lane ``j % per`` of operand 1's row ``j >> shift``,
:func:`~sparseforge.sw.wire.mv_layout`) and adds its product, on every lane, into the
OSR's first chunk, in place; a slice drains that chunk alone.

TTMc's outer product (``OSR[u * tlen + t] += B[j][u] * TSR[t]``) streams B's row: each
response of ``vlen`` values serves ``vlen * tlen`` operations (the last chunk fewer), one
value a ``tlen`` of them, replicated over the lanes; the response is held on its
stream until its last operation takes it. The TSR rotates once per operation, ``r1``
times around, and clears on the last.

The queue lets reads be in flight while the datapath works: one operation a cycle while
the scratchpad answers one read a cycle (the paper's PE spends every other cycle on a
read; :mod:`sim.models.tensaurus` is the model). The datapath is pipelined (issue,
VVMUL, VVADD) for a clock of about 100 MHz on an ECP5: only a fold's (or outer
product's) TSR operand, read at issue, can still be in flight; a fold waits for the
entry its fiber's last scaling is writing, ``3 - tlen`` cycles a fiber when ``tlen <
3``, and the outer product's rounds forward it.
"""

import itertools

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import wire
from ..sw.wire import TensaurusKernel
from .interfaces import (
    ScratchpadPortSignature,
    chunk_bits,
    ciss_lane_layout,
    pe_drain_layout,
    spm_chunks,
)
from .stream_units import Queue, lowest

FOLD, DRAIN, SCALE_TSR, SCALE_OSR, END, OUTER = range(6)
"""The operations, in the order of an item's phases (a fold is FOLD, or OUTER in TTMc; a
scaling is one or the other; the end marker's END, one operation, comes last)."""


class TensaurusPeSignature(wiring.Signature):
    """A Tensaurus PE, seen from it (Section 5.2.4, Fig. 5b).

    - ``kernel`` (in, :class:`~sparseforge.sw.wire.TensaurusKernel`): held while a stream runs.
    - ``lane`` (stream in, :func:`~.interfaces.ciss_lane_layout`): its CISS lane, entry by entry,
      then the end marker.
    - ``forward`` (stream out): every lane item as taken, to the next PE of the row.
    - ``spm`` (out, :class:`~.interfaces.ScratchpadPortSignature`): its scratchpad reads, of
      :func:`~sparseforge.hw.interfaces.spm_chunks` chunks a row.
    - ``drain`` (stream out, :func:`~.interfaces.pe_drain_layout`): each finished slice's OSR, one
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


@block("tensaurus_pe")
class TensaurusPe(wiring.Component):
    """A Tensaurus PE: a TSR of ``tlen`` and an OSR of ``r1 * tlen`` chunks of ``vlen``
    accumulators, one chunk operation a cycle.

    Parameters
    ----------
    vlen : VLEN, lanes of VVMUL and VVADD.
    tlen : TLEN, chunks of VLEN in the TSR: the PE's share of a row of C (MTTKRP, TTMc)
        or of the output (MTTKRP, MM).
    r1 : B's rank in TTMc: the OSR holds ``olen = r1 * tlen`` chunks (OLEN), chunk
        ``u * tlen + t`` for ``Y[i, u]``'s chunk ``t``; the other kernels use its first ``tlen``.
    dw : bits of a value (signed).
    iw : bits of an index.
    acc_width : bits of an accumulator (signed; sums wrap).
    order : 3 for tensors (lanes carry k), 2 for matrices (MM only).
    queue : operations in flight between control and datapath (covers the scratchpad's
        latency).

    Members
    -------
    kernel : In(TensaurusKernel)
    lane : In(stream(ciss lane, last))
    forward : Out(stream(ciss lane, last))
    spm : Out(ScratchpadPortSignature)
        ``spm.request`` ({operand, row, chunk}) out, ``spm.response`` (vlen values) in.
    drain : Out(stream({row, chunk, lanes}))
        As :class:`~sparseforge.hw.tensaurus_pe.TensaurusPeSignature` says.

    Latency and throughput: one operation a cycle while its response is there and
    ``drain`` is taken: a nonzero takes ``tlen`` cycles, a fiber's end (MTTKRP) and a
    slice's drain ``tlen`` more each (in TTMc ``r1 * tlen`` each, with ``ceil(r1 /
    vlen)`` reads of B; in MV one each); a header or idle lane that ends nothing, one.
    A fiber's end waits ``max(0, DEPTH - tlen)`` more cycles for its TSR; the datapath's stages add
    two cycles of latency.
    """

    PARAMS = (Param("vlen", 4, 1, 16, "lanes of VVMUL and VVADD (VLEN)"),
              Param("tlen", 2, 1, 64, "chunks of VLEN in the TSR (TLEN)"),
              Param("r1", 1, 1, 64, "B's rank in TTMc: the OSR holds r1 * tlen chunks"),
              Param("dw", 16, 2, 32, "bits of a value"),
              Param("iw", 16, 1, 32, "bits of an index"),
              Param("acc_width", 32, 2, 64, "bits of an accumulator"),
              Param("order", 3, 2, 3, "tensor modes: 3, or 2 for matrices"),
              Param("queue", 4, 2, 64, "operations in flight"))
    DEPTH = 3
    """Cycles from an operation's issue to its TSR write being readable: a fold waits for
    the scaling ``tlen`` operations ahead of it when ``tlen`` is smaller."""
    REPORT = ({}, {"vlen": 1, "tlen": 1, "dw": 16, "iw": 16, "acc_width": 32, "order": 2})
    PAPER = "Table 2 (28 nm): PE 0.625 mm2, 27.2% of the accelerator (64 PEs)"

    def __init__(self, **params):
        v = check_params(self.PARAMS, params)
        self.vlen, self.tlen, self.dw, self.iw = v["vlen"], v["tlen"], v["dw"], v["iw"]
        self.r1, self.olen = v["r1"], v["r1"] * v["tlen"]
        self.acc_width, self.order, self.queue = v["acc_width"], v["order"], v["queue"]
        self.b_chunks = -(-self.r1 // self.vlen)           # of B's row in TTMc
        # An OUTER operation's B value is ``lane`` of its response, which it ``take``s
        # if it is the value's last use; on the last round it ``clear``s the TSR.
        self.op_layout = data.StructLayout({"op": 3, "scalar": self.dw, "row": self.iw,
                                            "chunk": chunk_bits(self.olen),
                                            "lane": chunk_bits(self.vlen), "take": 1,
                                            "clear": 1})
        super().__init__(TensaurusPeSignature(self.vlen, self.tlen, self.dw, self.iw,
                                              self.acc_width, self.order, self.r1))

    def elaborate(self, platform):
        m = Module()
        m.submodules.ops = ops = Queue(self.op_layout, depth=self.queue, latency=2)
        self._control(m, ops)
        self._datapath(m, ops)
        return m

    def _control(self, m, ops):
        """The lane's items as phases of operations, each read issued with its operation."""
        T, V, lane, forward, request = self.tlen, self.vlen, self.lane, self.forward, \
            self.spm.request
        ttmc, mv = self.kernel == TensaurusKernel.TTMC, self.kernel == TensaurusKernel.MV
        tensor = (self.kernel == TensaurusKernel.MTTKRP) | ttmc     # fibers: a TSR
        item = Signal(lane.payload.shape())
        pending, todo = Signal(), Signal(4)            # todo: fold, drain, scale, end
        cur_i, cur_j = Signal(self.iw), Signal(self.iw)
        has_fiber, in_slice = Signal(), Signal()
        idle = wire.CissWire(1, self.dw, self.iw, self.order).idle
        # Where a phase is: its operation ``chunk``; in a TTMc fold, the TSR's chunk
        # ``t``, B's value ``u = g * vlen + b`` (``b`` of response ``g``).
        chunk, t = Signal(chunk_bits(self.olen)), Signal(chunk_bits(T))
        b, g = Signal(chunk_bits(V)), Signal(chunk_bits(self.b_chunks))

        phase, _ = lowest(m, todo)                     # the lowest set bit of todo
        k = item.k if self.order == 3 else 0
        shift = wire.mv_layout(V)[1]                   # MV: b[j] is lane j % per of row j >> shift
        mv_lane = item.ij[:shift] if shift else 0
        op = Signal(self.op_layout)
        m.d.comb += ops.i.payload.eq(op)
        outer = ttmc & phase[0]
        last_round = chunk >= (self.r1 - 1) * T if self.r1 > 1 else 1
        reads = phase[2] | phase[0] & (~ttmc | (t == 0) & (b == 0))
        m.d.comb += [
            op.op.eq(Mux(phase[0], Mux(ttmc, OUTER, FOLD),
                         Mux(phase[1], DRAIN, Mux(phase[3], END, Mux(tensor, SCALE_TSR,
                                                                      SCALE_OSR))))),
            op.scalar.eq(item.nnz), op.chunk.eq(chunk),
            op.row.eq(Mux(phase[1], cur_i, Mux(phase[0], cur_j, Mux(tensor, k, item.ij)))),
            op.lane.eq(Mux(mv, mv_lane, b)), op.clear.eq(last_round),
            op.take.eq(~outer | (t == T - 1) & ((b == V - 1) | last_round)),
            request.payload.operand.eq(phase[0] | mv),
            request.payload.row.eq(Mux(phase[0], cur_j, Mux(tensor, k,
                                                            Mux(mv, item.ij >> shift, item.ij)))),
            request.payload.chunk.eq(Mux(outer, g, t)),
            request.valid.eq(pending & reads & ops.i.ready),
            ops.i.valid.eq(pending & todo.any() & (~reads | request.ready)),
        ]
        push = ops.i.valid & ops.i.ready
        whole = ttmc & (phase[0] | phase[1])           # once around the OSR
        advance = push & (Mux(whole, chunk == self.olen - 1, chunk == T - 1) | phase[3] | mv)
        with m.If(push):
            m.d.sync += [chunk.eq(Mux(advance, 0, chunk + 1)),
                         t.eq(Mux(advance | (t == T - 1), 0, t + 1))]
            with m.If(t == T - 1):
                m.d.sync += b.eq(Mux(b == V - 1, 0, b + 1))
                with m.If(b == V - 1):
                    m.d.sync += g.eq(g + 1)
        with m.If(advance):
            m.d.sync += [todo.eq(todo & ~phase), b.eq(0), g.eq(0)]
        done = pending & (~todo.any() | (advance & ~(todo & ~phase).any()))

        # The state an item leaves, once its phases are issued.
        marker = item.marker
        with m.If(done):
            with m.If(marker):
                m.d.sync += [has_fiber.eq(0), in_slice.eq(item.ij != idle)]
                with m.If(item.ij != idle):
                    m.d.sync += cur_i.eq(item.ij)
            with m.Else():
                m.d.sync += [cur_j.eq(item.ij), has_fiber.eq(tensor)]

        # Take the next item when this one is done and the forward register is free.
        given = lane.payload
        free = ~forward.valid | forward.ready
        m.d.comb += lane.ready.eq((~pending | done) & free)
        with m.If(lane.valid & lane.ready):
            new_marker = given.marker
            # A fold or drain judged here sees the state this item's predecessor left:
            # when it finishes on this cycle, that state is the one it is writing.
            fold = tensor & Mux(done, ~marker, has_fiber) & (
                new_marker | (given.ij != Mux(done & ~marker, item.ij, cur_j)))
            drain = Mux(done & marker, item.ij != idle, in_slice) & new_marker
            m.d.sync += [item.eq(given), pending.eq(1),
                         todo.eq(Cat(fold, drain, ~new_marker, given.last)),
                         forward.valid.eq(~mv | given.last), forward.payload.eq(given)]
        with m.Else():
            with m.If(done):
                m.d.sync += pending.eq(0)
            with m.If(forward.ready):
                m.d.sync += forward.valid.eq(0)

    def _datapath(self, m, ops):
        """Each operation in order, with its response, in three stages: issue (the
        operands, TSR head or scalar and lane, registered), VVMUL (the product registered)
        and VVADD into the head of the TSR or OSR with its shift, or a drain.

        Only the multiplier's TSR operand is read at issue, so only it can be in flight:
        it is ``tsr[n]`` behind the ``n`` TSR operations ahead, or, once ``n >= tlen``, the
        entry one of them writes: an OUTER's (its own operand, forwarded) or a scaling's
        (issue waits for its add). The adds read their heads as they write them."""
        V, T, A = self.vlen, self.tlen, self.acc_width
        op = ops.o.payload
        lanes = data.ArrayLayout(signed(A), V)
        tsr = [Signal(lanes, name=f"tsr{t}") for t in range(T)]
        osr = [Signal(lanes, name=f"osr{n}") for n in range(self.olen)]
        drain, response = self.drain, self.spm.response
        # The stages: VVMUL's operands (s1), then its product (s2), each with its operation.
        # s2 keeps the operand only where an OUTER there can be forwarded (tlen <= 2).
        stage = {"valid": 1, "op": 3, "row": self.iw, "chunk": chunk_bits(self.olen),
                 "clear": 1}
        s1 = Signal(data.StructLayout({**stage, "factor": lanes,
                                       "mul": data.ArrayLayout(signed(self.dw), V)}), name="s1")
        s2 = Signal(data.StructLayout({**stage, "product": lanes,
                                       **({"factor": lanes} if T <= 2 else {})}), name="s2")

        # Issue: the whole pipeline holds while its drain waits.
        out2 = (s2.op == DRAIN) | (s2.op == END)
        free = ~drain.valid | drain.ready
        advance = ~(s2.valid & out2) | free
        fold, outer = op.op == FOLD, op.op == OUTER
        mv = self.kernel == TensaurusKernel.MV
        hazard = Signal()
        factor = Signal(lanes)                          # the TSR's head after those ahead
        rotating = [s.valid & ((s.op == FOLD) | (s.op == OUTER) | (s.op == SCALE_TSR))
                    for s in (s2, s1)]
        with m.Switch(Cat(rotating[1], rotating[0])):
            for ahead in range(4):
                with m.Case(ahead):
                    flight = [s for s, bit in ((s2, 2), (s1, 1)) if ahead & bit]
                    if len(flight) < T:
                        m.d.comb += factor.eq(tsr[len(flight)])
                    else:
                        writer = flight[len(flight) - T]
                        m.d.comb += [factor.eq(writer.factor),
                                     hazard.eq((writer.op != OUTER) | writer.clear)]
        reads = (op.op != DRAIN) & (op.op != END)
        can = advance & ops.o.valid & ~((fold | outer) & hazard)
        issue = can & (~reads | response.valid)
        m.d.comb += [ops.o.ready.eq(issue), response.ready.eq(can & reads & op.take)]

        x = response.payload
        value = Signal(signed(self.dw))                 # OUTER: B[j][u], replicated
        with m.Switch(op.lane):
            for v in range(V):
                with m.Case(v):
                    m.d.comb += value.eq(x[v])
        scalar = op.scalar.as_signed()
        with m.If(advance):
            m.d.sync += [s1.valid.eq(issue), s1.op.eq(op.op), s1.row.eq(op.row),
                         s1.chunk.eq(op.chunk), s1.clear.eq(op.clear),
                         s2.valid.eq(s1.valid), s2.op.eq(s1.op), s2.row.eq(s1.row),
                         s2.chunk.eq(s1.chunk), s2.clear.eq(s1.clear)]
            if T <= 2:
                m.d.sync += s2.factor.eq(s1.factor)
            for v in range(V):
                m.d.sync += [s1.factor[v].eq(Mux(fold | outer, factor[v], scalar)),
                             s1.mul[v].eq(Mux(outer | mv, value, x[v])),
                             s2.product[v].eq((s1.factor[v] * s1.mul[v])[:A])]

        # VVADD and the shifts, in order: each head is the one this operation adds to.
        fold2, outer2, scale_tsr2 = s2.op == FOLD, s2.op == OUTER, s2.op == SCALE_TSR
        head_t = Signal(lanes)
        head_o = Signal(lanes)
        for v in range(V):
            m.d.comb += [head_t[v].eq((tsr[0][v] + s2.product[v])[:A]),
                         head_o[v].eq((osr[0][v] + s2.product[v])[:A])]
        with m.If(advance & s2.valid):
            with m.If(fold2 | outer2 | scale_tsr2):
                m.d.sync += [*(a.eq(b) for a, b in itertools.pairwise(tsr)),
                             tsr[-1].eq(Mux(fold2 | outer2 & s2.clear, 0,
                                            Mux(outer2, tsr[0], head_t)))]
            with m.If(~scale_tsr2 & (s2.op != END)):
                # The first tlen chunks shift; in TTMc all olen of them; in MV only the
                # first is used, in place.
                new = Mux(s2.op == DRAIN, 0, head_o)
                with m.If(mv):
                    m.d.sync += osr[0].eq(new)
                with m.Else():
                    m.d.sync += [*(a.eq(b) for a, b in itertools.pairwise(osr[:T])),
                                 osr[T - 1].eq(new)]
                if self.olen > T:
                    with m.If(self.kernel == TensaurusKernel.TTMC):
                        m.d.sync += [*(a.eq(b) for a, b in itertools.pairwise(osr[T - 1:])),
                                     osr[-1].eq(new)]
            with m.If(out2):
                ending = s2.op == END
                m.d.sync += [drain.valid.eq(1), drain.payload.row.eq(Mux(ending, 0, s2.row)),
                             drain.payload.chunk.eq(Mux(ending, 0, s2.chunk)),
                             drain.payload.lanes.eq(Mux(ending, 0, osr[0])),
                             drain.payload.last.eq(ending)]
        with m.If(drain.ready & ~(advance & s2.valid & out2)):
            m.d.sync += drain.valid.eq(0)
