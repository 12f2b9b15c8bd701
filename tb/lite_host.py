# amaranth: UnusedElaboratable=no
"""A component's AXI4-Lite registers driven by the gateware host, for benches: the host's
register commands go in as a stream and their responses come out, so a run needs no
Python on the bus and goes natively at Verilator's speed."""

from amaranth.hdl import Module
from amaranth.lib import wiring

from ..hw.lite_host import LiteHost
from .native import design_identity


class HostedRegisters(wiring.Component):
    """``target`` (a component with AXI4-Lite registers on ``s_axil``) with a
    :class:`~sparseforge.hw.lite_host.LiteHost` of ``addr_width`` bits on them.

    Members
    -------
    commands : In(stream(command_layout(addr_width)))
        The host's commands (:class:`~sparseforge.hw.lite_host.LiteOp`).
    responses : Out(stream(response_layout()))
        One a command, in order.
    ``passed`` : the target's ports of those names, as the target has them (an
        accelerator's memory master).
    """

    def __init__(self, target, addr_width=8, passed=()):
        self.target, self.host = target, LiteHost(addr_width)
        self.addr_width, self.passed = addr_width, tuple(passed)
        members = self.host.signature.members
        super().__init__({"commands": members["commands"], "responses": members["responses"],
                          **{name: target.signature.members[name] for name in self.passed}})

    @property
    def design(self):
        """The target's :func:`~sparseforge.tb.native.design_identity` and the host's
        width (None where the target's is unknown)."""
        inner = design_identity(self.target)
        return None if inner is None else {"target": inner, "addr_width": self.addr_width,
                                           "passed": self.passed}

    def elaborate(self, platform):
        m = Module()
        m.submodules.target, m.submodules.host = self.target, self.host
        wiring.connect(m, wiring.flipped(self.commands), self.host.commands)
        wiring.connect(m, self.host.responses, wiring.flipped(self.responses))
        wiring.connect(m, self.host.m_axil, self.target.s_axil)
        for name in self.passed:
            wiring.connect(m, getattr(self.target, name), wiring.flipped(getattr(self, name)))
        return m
