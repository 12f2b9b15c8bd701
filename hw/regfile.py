"""The accelerator's AXI4-Lite register file, generated from the one register map.

:mod:`sparseforge.sw.regmap` defines the registers (names, offsets, access, widths,
resets, status fields); this block is their hardware, the C header, README table and host
driver their other faces, so the four cannot disagree.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..core.params import Param, check_params
from ..core.registry import block
from ..sw import regmap
from .axi import DECERR, OKAY, SLVERR, AxiLiteSignature, attach, pins


class RegisterSignature(wiring.Signature):
    """The accelerator's side of the register file, seen from the register file: each RW
    register an output of its width, each W1 register a one-cycle pulse out, each RO
    register (each field of one with fields, but the register file's own) an input.
    Members are named after the registers and fields (``kernel``, ``start``, ``cycles``,
    ``done``, ``busy``)."""

    def __init__(self, registers=regmap.REGISTERS):
        members = {}
        for r in registers:
            if r.access == "RO":
                members |= {f.name: In(f.width) for f in r.fields if not f.own}
                if not r.fields:
                    members[r.name] = In(r.width)
            else:
                members[r.name] = Out(r.width, init=r.reset)
        super().__init__(members)


@block("regfile")
class RegisterFile(wiring.Component):
    """The accelerator's AXI4-Lite register file, generated from the map in ``sw/regmap.py``.

    Parameters
    ----------
    addr_width : bits of the AXI4-Lite address; offsets past the map answer DECERR.

    Members
    -------
    s_axil : In(pins(AxiLiteSignature(addr_width, 32)))
        The host's bus, standard-named: ``s_axil__awaddr``, ``s_axil__rdata``, ...
    regs : Out(RegisterSignature())
        The accelerator's side. ``busy`` refuses writes.

    A write takes its address and data in either order (AWREADY and WREADY each high
    while its register is free), is done the cycle both are held and answered on B the
    cycle after: OKAY; DECERR where no register is; SLVERR for a write to an RO
    register, one whose strobes select a byte below its address (an unaligned address
    writes its byte and those above), or one while ``busy`` (refused: nothing changes
    and the status register's sticky ``refused`` bit is set, until the next ``start`` is
    accepted). RW registers take the bytes WSTRB selects; a W1 register pulses its
    output the cycle after a write with bit 0 set. A read answers on R the cycle after AR
    with the register's value (RO: the input as it is then; W1: 0); DECERR where no
    register is, SLVERR at an address not a multiple of 4 (a read is of a whole
    register).

    Timing: every AXI output is a register. The longest path is the read multiplexer:
    ARADDR decoded against the map's offsets, selecting one register (or an input)
    into RDATA, five LUT levels; it meets 100 MHz on the ECP5-25k (``sparseforge synth
    regfile`` gives the figure).
    """

    PARAMS = (Param("addr_width", regmap.span().bit_length() - 1,
                    regmap.span().bit_length() - 1, 32, "bits of the AXI4-Lite address"),)
    REPORT = ({},)

    def __init__(self, **params):
        self.addr_width = check_params(RegisterFile.PARAMS, params)["addr_width"]
        self.registers = regmap.REGISTERS
        super().__init__({"s_axil": In(pins(AxiLiteSignature(self.addr_width))),
                          "regs": Out(RegisterSignature(self.registers))})

    def _value(self, m, r, refused):
        """What a read of ``r`` answers."""
        if r.access == "W1":
            return Const(0, r.width)
        if not r.fields:
            return getattr(self.regs, r.name)
        value = Signal(r.width, name=f"{r.name}_value")
        m.d.comb += [value[f.lsb:f.lsb + f.width].eq(
            refused if f.own else getattr(self.regs, f.name)) for f in r.fields]
        return value

    def elaborate(self, platform):
        m = Module()
        bus = AxiLiteSignature(self.addr_width).flip().create()
        attach(m, self.s_axil, bus)
        regs, busy = self.regs, self.regs.busy
        refused = Signal()

        def decode(addr):
            """``(hits, resp)``: a register's hit per register, the response."""
            hits = [addr[2:] == r.offset >> 2 for r in self.registers]
            return hits, Mux(Cat(*hits).any(), OKAY, DECERR)

        # writes: address and data held apart, done together, answered on B
        aw_addr, aw_held = Signal(self.addr_width), Signal()
        w_data, w_strb, w_held = Signal(32), Signal(4), Signal()
        m.d.comb += [bus.aw.ready.eq(~aw_held), bus.w.ready.eq(~w_held)]
        with m.If(bus.aw.valid & bus.aw.ready):
            m.d.sync += [aw_addr.eq(bus.aw.payload.addr), aw_held.eq(1)]
        with m.If(bus.w.valid & bus.w.ready):
            m.d.sync += [w_data.eq(bus.w.payload.data), w_strb.eq(bus.w.payload.strb),
                         w_held.eq(1)]
        with m.If(bus.b.valid & bus.b.ready):
            m.d.sync += bus.b.valid.eq(0)
        for r in self.registers:
            if r.access == "W1":
                m.d.sync += getattr(regs, r.name).eq(0)
        write = aw_held & w_held & ~bus.b.valid
        hits, found = decode(aw_addr)
        with m.If(write):
            m.d.sync += [aw_held.eq(0), w_held.eq(0), bus.b.valid.eq(1),
                         bus.b.payload.resp.eq(found)]
            below = Array(Const((1 << k) - 1, 3) for k in range(4))[aw_addr[:2]]
            with m.If(busy | (w_strb[:3] & below).any()):
                m.d.sync += bus.b.payload.resp.eq(SLVERR)
                with m.If(busy):
                    m.d.sync += refused.eq(1)
            with m.Else():
                for r, hit in zip(self.registers, hits, strict=True):
                    with m.If(hit):
                        self._write(m, r, w_data, w_strb, refused)
                        if r.access == "RO":
                            m.d.sync += bus.b.payload.resp.eq(SLVERR)

        # reads: answered the cycle after AR
        m.d.comb += bus.ar.ready.eq(~bus.r.valid | bus.r.ready)
        with m.If(bus.r.valid & bus.r.ready):
            m.d.sync += bus.r.valid.eq(0)
        addr = bus.ar.payload.addr
        hits, found = decode(addr)
        values = [self._value(m, r, refused) for r in self.registers]
        with m.If(bus.ar.valid & bus.ar.ready):
            m.d.sync += [bus.r.valid.eq(1), bus.r.payload.resp.eq(found),
                         bus.r.payload.data.eq(0)]
            with m.If(addr[:2] != 0):
                m.d.sync += bus.r.payload.resp.eq(SLVERR)
            with m.Else():
                for hit, value in zip(hits, values, strict=True):
                    with m.If(hit):
                        m.d.sync += bus.r.payload.data.eq(value)
        return m

    def _write(self, m, r, data, strobes, refused):
        """The write of ``data`` under ``strobes`` to register ``r``."""
        target = getattr(self.regs, r.name, None)
        if r.access == "W1":
            with m.If(strobes[0] & data[0]):
                m.d.sync += [target.eq(1), refused.eq(0)]
        elif r.access == "RW":
            for byte in range(-(-r.width // 8)):
                top = min(8 * byte + 8, r.width)
                with m.If(strobes[byte]):
                    m.d.sync += target[8 * byte:top].eq(data[8 * byte:top])
