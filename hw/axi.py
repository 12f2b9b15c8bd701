"""AXI4 and AXI4-Lite, written once: channel layouts and signatures, and the pins.

Amaranth's standard library has no AXI; every AXI port of sparseforge is built from
what is here. A channel is an ``amaranth.lib.stream`` stream whose payload is a struct of
the channel's fields, named as the AMBA AXI specification names them without the
channel's prefix (AR's ``addr`` is ARADDR); ``valid`` and ``ready`` are the stream's.
Signatures are the master's view: a master declares ``Out(AxiReadSignature(...))``, a
slave ``In(...)``. Read and write sides are separate signatures (AXI's ID_R_WIDTH and
ID_W_WIDTH may differ), so a bridge that only reads has no write channels.

Only the signals sparseforge drives or needs are carried: AxLOCK, AxCACHE, AxPROT, AxQOS,
AxREGION and the USER signals take their defaults (normal, non-cacheable, unprivileged
access) at the slave, as the specification allows; every burst is INCR.

At a Verilog top the channels become the standard signal names through
:func:`attach` and :func:`pins`: ``m_axi__araddr``, ``m_axi__arvalid``, ... (Amaranth
joins a member's path with ``__``), which cocotbext-axi's ``AxiBus.from_prefix(dut,
"m_axi_")`` finds.
"""

from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core.errors import ParameterError

BURST_INCR = 1
"""AxBURST of an incrementing burst, the only kind sparseforge issues."""

OKAY, EXOKAY, SLVERR, DECERR = range(4)
"""xRESP codes."""

MAX_BEATS = 256
"""Beats of the longest AXI4 INCR burst (AxLEN is 8 bits)."""


def address_layout(addr_width, id_width):
    """AR and AW: ``{id, addr, len, size, burst}`` (``len`` is beats - 1, ``size`` log2
    bytes a beat)."""
    return data.StructLayout({"id": id_width, "addr": addr_width, "len": 8, "size": 3,
                              "burst": 2})


def write_data_layout(data_width):
    """W: ``{data, strb, last}``, a strobe bit a byte lane."""
    return data.StructLayout({"data": data_width, "strb": data_width // 8, "last": 1})


def write_response_layout(id_width):
    """B: ``{id, resp}``."""
    return data.StructLayout({"id": id_width, "resp": 2})


def read_data_layout(data_width, id_width):
    """R: ``{id, data, resp, last}``."""
    return data.StructLayout({"id": id_width, "data": data_width, "resp": 2, "last": 1})


def _check(addr_width, data_width, *ids):
    if not 1 <= addr_width <= 64:
        raise ParameterError(f"addr_width={addr_width}: an AXI address is 1 to 64 bits")
    if data_width not in (8, 16, 32, 64, 128, 256, 512, 1024):
        raise ParameterError(f"data_width={data_width}: an AXI data bus is 8 to 1024 bits, "
                             "a power of two")
    for id_width in ids:
        if not 1 <= id_width <= 32:
            raise ParameterError(f"id_width={id_width}: an AXI ID here is 1 to 32 bits")


class AxiReadSignature(wiring.Signature):
    """The read channels of an AXI4 interface, seen from the master.

    - ``ar`` (stream out, :func:`address_layout`): a burst of ``len + 1`` beats of
      ``2**size`` bytes from ``addr``, tagged ``id``.
    - ``r`` (stream in, :func:`read_data_layout`): its beats, ``last`` on the final one.
      Beats of one ID come in the order of their bursts; beats of different IDs in any
      order, interleaved.
    """

    def __init__(self, addr_width, data_width, id_width):
        _check(addr_width, data_width, id_width)
        self.addr_width, self.data_width, self.id_width = addr_width, data_width, id_width
        super().__init__({
            "ar": Out(stream.Signature(address_layout(addr_width, id_width))),
            "r": In(stream.Signature(read_data_layout(data_width, id_width))),
        })


class AxiWriteSignature(wiring.Signature):
    """The write channels of an AXI4 interface, seen from the master.

    - ``aw`` (stream out, :func:`address_layout`): a burst's address.
    - ``w`` (stream out, :func:`write_data_layout`): the beats of the bursts, in the
      order of their addresses (W carries no ID), ``last`` on each burst's final one.
    - ``b`` (stream in, :func:`write_response_layout`): one response a burst, once it has
      landed; in order within an ID.
    """

    def __init__(self, addr_width, data_width, id_width):
        _check(addr_width, data_width, id_width)
        self.addr_width, self.data_width, self.id_width = addr_width, data_width, id_width
        super().__init__({
            "aw": Out(stream.Signature(address_layout(addr_width, id_width))),
            "w": Out(stream.Signature(write_data_layout(data_width))),
            "b": In(stream.Signature(write_response_layout(id_width))),
        })


class AxiSignature(wiring.Signature):
    """An AXI4 interface, seen from the master: a ``read`` side
    (:class:`AxiReadSignature`, IDs of ``read_id_width`` bits) and a ``write`` side
    (:class:`AxiWriteSignature`, ``write_id_width``)."""

    def __init__(self, addr_width, data_width, read_id_width, write_id_width):
        super().__init__({
            "read": Out(AxiReadSignature(addr_width, data_width, read_id_width)),
            "write": Out(AxiWriteSignature(addr_width, data_width, write_id_width)),
        })


class AxiLiteSignature(wiring.Signature):
    """An AXI4-Lite interface, seen from the master: single beats, no IDs, every
    transfer the bus's width.

    - ``aw``, ``ar`` (streams out): ``{addr}``.
    - ``w`` (stream out): ``{data, strb}``.
    - ``b`` (stream in): ``{resp}``.
    - ``r`` (stream in): ``{data, resp}``.
    """

    def __init__(self, addr_width, data_width=32):
        if data_width not in (32, 64):
            raise ParameterError(f"data_width={data_width}: AXI4-Lite's bus is 32 or 64 "
                                 "bits")
        _check(addr_width, data_width)
        self.addr_width, self.data_width = addr_width, data_width
        address = data.StructLayout({"addr": addr_width})
        super().__init__({
            "aw": Out(stream.Signature(address)),
            "w": Out(stream.Signature(data.StructLayout({"data": data_width,
                                                         "strb": data_width // 8}))),
            "b": In(stream.Signature(data.StructLayout({"resp": 2}))),
            "ar": Out(stream.Signature(address)),
            "r": In(stream.Signature(data.StructLayout({"data": data_width, "resp": 2}))),
        })


def _channels(signature, path=()):
    """``(path, stream member)`` of every channel in a signature of channels, nested
    sides (``read``, ``write``) walked through."""
    for name, member in signature.members.items():
        if isinstance(member.signature, stream.Signature):
            yield (*path, name), member
        else:
            yield from _channels(member.signature, (*path, name))


class PinSignature(wiring.Signature):
    """The flat, standard-named signals of a signature of channels (:class:`AxiSignature`,
    :class:`AxiLiteSignature`, either side alone), seen from the same side: a channel
    ``ar``'s payload field ``addr`` is the port ``araddr``, its ``valid`` ``arvalid`` and
    its ``ready`` ``arready``."""

    def __init__(self, channels):
        self.channels = channels
        members = {}
        for path, member in _channels(channels):
            name, out = path[-1], member.flow
            back = In if out == Out else Out
            for field, shape in member.signature.members["payload"].shape.members.items():
                members[f"{name}{field}"] = out(shape)
            members[f"{name}valid"], members[f"{name}ready"] = out(1), back(1)
        super().__init__(members)


def pins(channels):
    """The :class:`PinSignature` of ``channels``, for a component's top-level AXI port:
    ``m_axi: Out(pins(AxiSignature(...)))`` on a master, ``In(...)`` on a slave."""
    return PinSignature(channels)


def attach(m, pins, channels):
    """Joins the pins ``pins`` to the channels ``channels``, both as seen by the module
    ``m`` builds: a channel that flows out of it there (a submodule's ``Out`` channel, or
    a flipped interface's ``In``) drives the pins; one that flows in is driven by them.
    No logic: wires only."""
    for path, member in _channels(channels.signature):
        channel = channels
        for part in path:
            channel = getattr(channel, part)
        name = path[-1]
        outward = member.flow == Out
        for field in channel.payload.shape().members:
            pin, value = getattr(pins, f"{name}{field}"), channel.payload[field]
            m.d.comb += pin.eq(value) if outward else value.eq(pin)
        valid, ready = getattr(pins, f"{name}valid"), getattr(pins, f"{name}ready")
        if outward:
            m.d.comb += [valid.eq(channel.valid), channel.ready.eq(ready)]
        else:
            m.d.comb += [channel.valid.eq(valid), ready.eq(channel.ready)]


class Pinout(wiring.Component):
    """A master's channels brought out as pins: ``channels`` in (stream form, as the
    master drives them), ``pins`` out (:class:`PinSignature`). Wires only."""

    def __init__(self, channels):
        super().__init__({"channels": In(channels), "pins": Out(pins(channels))})

    def elaborate(self, platform):
        m = Module()
        attach(m, self.pins, wiring.flipped(self.channels))
        return m
