"""A host in gateware: AXI4-Lite transactions from a stream of commands, in place of a
CPU driving the accelerator's registers (a bench's, or a board's self-test).

Each command is one of :class:`LiteOp`: write ``data`` to ``addr``; read ``addr``; or
wait, reading ``addr`` until ``data & mask`` is nonzero (a status bit). Every command
gets one response, in order: the word read (a wait's last read) and the transaction's
RESP. One transaction at a time: AW and W together, then B; AR, then R.
"""

import enum

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axi import AxiLiteSignature, attach, pins


class LiteOp(enum.IntEnum):
    WRITE = 0
    READ = 1
    WAIT = 2


def command_layout(addr_width):
    """A command: ``op`` (:class:`LiteOp`), ``addr``, ``data`` (a write's word, a wait's
    mask)."""
    return data.StructLayout({"op": 2, "addr": addr_width, "data": 32})


def response_layout():
    """A command's response: the ``data`` read (0 for a write) and the ``resp``."""
    return data.StructLayout({"data": 32, "resp": 2})


class LiteHost(wiring.Component):
    """Commands in, AXI4-Lite out (``m_axil``, standard-named pins), responses back.

    Members
    -------
    commands : In(stream(command_layout(addr_width)))
    responses : Out(stream(response_layout()))
    m_axil : Out(pins(AxiLiteSignature(addr_width, 32)))
    """

    def __init__(self, addr_width=8):
        self.addr_width = addr_width
        self.channels = AxiLiteSignature(addr_width, 32)
        super().__init__({"commands": In(stream.Signature(command_layout(addr_width))),
                          "responses": Out(stream.Signature(response_layout())),
                          "m_axil": Out(pins(self.channels))})

    def elaborate(self, platform):
        m = Module()
        bus = self.channels.create(path=("bus",))
        attach(m, self.m_axil, bus)
        cmd, out = self.commands.payload, self.responses
        word, resp = Signal(32), Signal(2)
        sent = Signal(2)                                    # AW, W taken
        m.d.comb += [bus.aw.payload.addr.eq(cmd.addr), bus.w.payload.data.eq(cmd.data),
                     bus.w.payload.strb.eq(0b1111), bus.ar.payload.addr.eq(cmd.addr),
                     out.payload.data.eq(word), out.payload.resp.eq(resp)]
        with m.FSM():
            with m.State("idle"), m.If(self.commands.valid):
                m.d.sync += sent.eq(0)
                m.next = "issue"
            with m.State("issue"):
                with m.If(cmd.op == LiteOp.WRITE):
                    m.d.comb += [bus.aw.valid.eq(~sent[0]), bus.w.valid.eq(~sent[1])]
                    with m.If(bus.aw.valid & bus.aw.ready):
                        m.d.sync += sent[0].eq(1)
                    with m.If(bus.w.valid & bus.w.ready):
                        m.d.sync += sent[1].eq(1)
                    with m.If((sent[0] | bus.aw.ready) & (sent[1] | bus.w.ready)):
                        m.next = "b"
                with m.Else():
                    m.d.comb += bus.ar.valid.eq(1)
                    with m.If(bus.ar.ready):
                        m.next = "r"
            with m.State("b"):
                m.d.comb += bus.b.ready.eq(1)
                with m.If(bus.b.valid):
                    m.d.sync += [word.eq(0), resp.eq(bus.b.payload.resp)]
                    m.next = "answer"
            with m.State("r"):
                m.d.comb += bus.r.ready.eq(1)
                with m.If(bus.r.valid):
                    m.d.sync += [word.eq(bus.r.payload.data), resp.eq(bus.r.payload.resp)]
                    met = (bus.r.payload.data & cmd.data) != 0
                    with m.If((cmd.op == LiteOp.WAIT) & ~met & (bus.r.payload.resp == 0)):
                        m.next = "issue"
                    with m.Else():
                        m.next = "answer"
            with m.State("answer"):
                m.d.comb += out.valid.eq(1)
                with m.If(out.ready):
                    m.d.comb += self.commands.ready.eq(1)
                    m.next = "idle"
        return m
