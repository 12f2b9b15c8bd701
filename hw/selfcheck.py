"""A self-checking wrapper, for running a block on a board with nothing but LEDs attached.

:class:`SelfCheck` replays a program from block RAM into a block's input
streams and compares what one of its output streams carries with expected
values held in a second ROM. The program and the expected values come in as
constructor arguments (the host computes them, from the block's model or its
host program), so this module knows nothing of any particular block.
"""

import functools

from amaranth.hdl import Cat, Const, Module, Shape, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

LFSR_TAPS = (15, 13, 12, 10)
"""Taps of the 16-bit Fibonacci LFSR (x^16 + x^14 + x^13 + x^11 + 1) behind the stalls."""


def streams(signature, flow):
    """The names of a signature's stream members of ``flow`` (``In`` or ``Out``), in order;
    a stream inside a sub-interface by its flattened name (``parent__fill``)."""
    names = []
    for name, member in signature.members.items():
        if not member.is_signature:
            continue
        if not isinstance(member.signature, stream.Signature):
            names += [f"{name}__{inner}" for inner in streams(member.signature, flow)]
        elif member.flow == flow:
            names.append(name)
    return names


def _member(signature, name):
    """The member a flattened ``name`` of :func:`streams` names in ``signature``."""
    *outer, last = name.split("__")
    for part in outer:
        signature = signature.members[part].signature
    return signature.members[last]


def _port(dut, name):
    """The interface object a flattened ``name`` of :func:`streams` names on ``dut``."""
    return functools.reduce(getattr, name.split("__"), dut)


def _bits(shape, value):
    """``value`` of a payload ``shape`` (a layout or a plain shape) as an unsigned integer."""
    const = Const.cast(shape.const(value)) if hasattr(shape, "const") else Const(value, shape)
    return const.value & ((1 << len(const)) - 1)


class SelfCheck(wiring.Component):
    """Drives ``dut`` from an on-chip program and checks one of its output streams.

    Parameters
    ----------
    dut : the block, a ``wiring.Component``; it becomes a submodule.
    ops : the program, ``(port, payload)`` pairs in order: ``port`` names one of
        the block's input streams, ``payload`` is a value of that stream's
        payload shape (a mapping for a struct layout).
    expected : the values ``output`` must carry, in order.
    output : the name of the block's output stream to check.
    patience : cycles without any transfer after which a run that has not
        finished counts as hung, and fails.
    stalls : add pseudo-random gaps before input transfers and back-pressure
        on ``output`` (a 16-bit LFSR), so the handshakes are exercised.

    The block is driven only through valid/ready: each operation is presented
    on its stream until the block takes it, then the next one (one at a time,
    so the block sees program order whatever its latencies), and ``output``
    is taken whenever it is valid (and the LFSR allows). An output that
    differs from its expected value, or arrives after the last one, fails.

    Members
    -------
    done : Out(1)
        The run is over: every operation sent and every expected output
        taken, or a failure seen.
    passed : Out(1)
        Done, and every output was as expected.
    failed : Out(1)
        A wrong or surplus output, or no transfer for ``patience`` cycles
        before the end. Sticky.

    ``program`` and ``expected`` hold the two ROMs' words (operations, outputs).
    """

    def __init__(self, dut, ops, expected, output, patience=1024, stalls=True):
        inputs, signature = streams(dut.signature, In), dut.signature
        if output not in streams(dut.signature, Out):
            raise ValueError(f"output={output!r}: expected one of the block's output streams "
                             f"({', '.join(streams(dut.signature, Out))})")
        unknown = sorted({port for port, _ in ops} - set(inputs))
        if unknown:
            raise ValueError(f"ops: port {unknown[0]!r} is not an input stream of the block "
                             f"(inputs: {', '.join(inputs)})")
        if not ops or not len(expected):
            raise ValueError("ops and expected must each hold at least one item")
        shapes = {name: _member(signature, name).signature.members["payload"].shape
                  for name in inputs}
        width = max(Shape.cast(s).width for s in shapes.values())
        self.dut, self.output, self.patience, self.stalls = dut, output, patience, stalls
        self._inputs = inputs
        self._op = data.StructLayout({"port": range(len(inputs)), "payload": width})
        self.program = [{"port": inputs.index(port), "payload": _bits(shapes[port], payload)}
                        for port, payload in ops]
        out_shape = _member(signature, output).signature.members["payload"].shape
        self._out_width = Shape.cast(out_shape).width
        self.expected = [_bits(out_shape, v) for v in expected]
        super().__init__({"done": Out(1), "passed": Out(1), "failed": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        n_ops, n_out = len(self.program), len(self.expected)

        lfsr = Signal(16, init=0xACE1)
        feedback = lfsr[LFSR_TAPS[0]]
        for tap in LFSR_TAPS[1:]:
            feedback = feedback ^ lfsr[tap]
        m.d.sync += lfsr.eq(Cat(feedback, lfsr[:-1]))
        go, take = (lfsr[0], lfsr[8]) if self.stalls else (Const(1), Const(1))
        primed = Signal()                       # the ROMs' first words are out
        m.d.sync += primed.eq(1)

        # The program: one operation presented until taken, then the next.
        m.submodules.program = program = Memory(shape=self._op, depth=n_ops,
                                                init=self.program)
        op = program.read_port()
        index = Signal(range(n_ops + 1))
        presenting = Signal()                   # valid is up and must stay up
        sent = Signal()
        pending = primed & (index < n_ops)
        for k, name in enumerate(self._inputs):
            port = _port(dut, name)
            m.d.comb += [port.payload.eq(op.data.payload),
                         port.valid.eq(pending & (op.data.port == k) & (presenting | go))]
        valid = Cat(_port(dut, name).valid for name in self._inputs).any()
        m.d.comb += [sent.eq(Cat(_port(dut, name).valid & _port(dut, name).ready
                                 for name in self._inputs).any()),
                     op.addr.eq(index + sent)]
        m.d.sync += [index.eq(index + sent), presenting.eq(valid & ~sent)]

        # The checker: each output transfer against the next expected value.
        m.submodules.expected = expected = Memory(shape=self._out_width, depth=n_out,
                                                  init=self.expected)
        want = expected.read_port()
        out = _port(dut, self.output)
        taken = Signal(range(n_out + 1))
        took = Signal()
        wrong, hung = Signal(), Signal()
        m.d.comb += [out.ready.eq(primed & take),
                     took.eq(out.valid & out.ready),
                     want.addr.eq(taken + took)]
        with m.If(took):
            with m.If((taken == n_out) | (Value.cast(out.payload) != want.data)):
                m.d.sync += wrong.eq(1)
            with m.Else():
                m.d.sync += taken.eq(taken + 1)

        finished = (index == n_ops) & (taken == n_out)
        idle = Signal(range(self.patience + 1))
        with m.If(sent | took | finished):
            m.d.sync += idle.eq(0)
        with m.Elif(idle == self.patience):
            m.d.sync += hung.eq(1)
        with m.Else():
            m.d.sync += idle.eq(idle + 1)

        m.d.comb += [self.failed.eq(wrong | hung),
                     self.done.eq(finished | self.failed),
                     self.passed.eq(finished & ~self.failed)]
        return m
