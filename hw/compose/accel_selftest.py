# amaranth: UnusedElaboratable=no
"""The accelerator checking itself, for a board with nothing but LEDs attached.

Everything a run needs is on chip: the accelerator's memory is an
:class:`~sparseforge.hw.axi_ram.AxiRam` initialised with the run's image; a
:class:`~sparseforge.hw.lite_host.LiteHost` programs its registers, in place of a CPU,
from a ROM of commands (the register writes, ``start``, a wait for ``done``); then a
checker reads the output region through the memory's second port and compares it, word
by word, with the words the host expects, held in a second ROM. The program, the image
and the expected words come in as constructor arguments (the host computes them), so
this module knows nothing of any kernel.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import Out
from amaranth.utils import ceil_log2

from ..axi_ram import AxiRam
from ..lite_host import LiteHost, command_layout


class AccelSelfTest(wiring.Component):
    """``accel`` run from on-chip memory and checked.

    Parameters
    ----------
    accel : an :class:`~sparseforge.hw.compose.accel.Accel`; it becomes a submodule.
    image : the memory's initial bus words (word 0 at byte 0).
    commands : the host's commands, in order: mappings of ``op``
        (:class:`~sparseforge.hw.lite_host.LiteOp`), ``addr``, ``data`` and ``fail``, the
        bits of the response's word that fail the run when set (a wait's ``error``).
    first, expected : the bus words from word ``first`` on must be ``expected`` once the
        commands are done.
    limit : cycles from reset within which everything must be done, or the run hung.

    Members
    -------
    done : Out(1)
        Every word checked, or a failure seen.
    passed : Out(1)
        Done, every response OKAY with no ``fail`` bit set, every word as expected.
    failed : Out(1)
        A response refused or failing, a word unlike its expected one, or ``limit``
        cycles passed before the end. Sticky.
    """

    def __init__(self, accel, image, commands, first, expected, limit):
        if not commands or not len(expected):
            raise ValueError("commands and expected must each hold at least one item")
        self.accel, self.first, self.limit = accel, first, limit
        self.expected = [int(w) for w in expected]
        words = max(len(image), first + len(self.expected))
        self.ram = AxiRam.serving(accel.m_axi.signature, 1 << ceil_log2(words), image)
        self.host = LiteHost(addr_width=len(accel.s_axil.awaddr))
        self._op = data.StructLayout({"command": command_layout(self.host.addr_width),
                                      "fail": 32})
        self.program = [{"command": {k: int(c[k]) for k in ("op", "addr", "data")},
                         "fail": int(c["fail"])} for c in commands]
        super().__init__({"done": Out(1), "passed": Out(1), "failed": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.accel, m.submodules.ram = accel, ram = self.accel, self.ram
        m.submodules.host = host = self.host
        wiring.connect(m, accel.m_axi, ram.s_axi)
        wiring.connect(m, host.m_axil, accel.s_axil)
        refused, wrong, hung = Signal(), Signal(), Signal()

        # The program: each command presented until the host answers it.
        n = len(self.program)
        m.submodules.program = program = Memory(shape=self._op, depth=n, init=self.program)
        op = program.read_port()
        index, primed = Signal(range(n + 1)), Signal()
        answered = host.responses.valid & host.responses.ready
        m.d.sync += primed.eq(1)
        m.d.comb += [host.commands.valid.eq(primed & (index < n)),
                     host.commands.payload.eq(op.data.command),
                     host.responses.ready.eq(1), op.addr.eq(index + answered)]
        with m.If(answered):
            m.d.sync += index.eq(index + 1)
            response = host.responses.payload
            with m.If((response.resp != 0) | (response.data & op.data.fail).any()):
                m.d.sync += refused.eq(1)

        # The checker: the output's words through the memory's second port, against the
        # expected ones, once every command is answered.
        count = len(self.expected)
        m.submodules.expected = expected = Memory(shape=len(ram.peek.data), depth=count,
                                                  init=self.expected)
        want = expected.read_port()
        at, looked = Signal(range(count + 1)), Signal()
        reading = (index == n) & (at < count)
        m.d.comb += [ram.peek.addr.eq(self.first + at), want.addr.eq(at)]
        m.d.sync += looked.eq(reading)
        with m.If(reading):
            m.d.sync += at.eq(at + 1)
        with m.If(looked & (ram.peek.data != want.data)):
            m.d.sync += wrong.eq(1)
        checked = (at == count) & ~looked

        # The watchdog: a run that takes past ``limit`` cycles hung.
        cycles = Signal(range(self.limit + 1))
        with m.If(cycles == self.limit):
            m.d.sync += hung.eq(1)
        with m.Elif(~checked):
            m.d.sync += cycles.eq(cycles + 1)

        m.d.comb += [self.failed.eq(refused | wrong | hung),
                     self.done.eq(checked | self.failed),
                     self.passed.eq(checked & ~self.failed)]
        return m
